# GridACE: two commands on a fresh machine.
#   make demo   creates .venv if missing, installs, runs the demo
#   make test   creates .venv if missing, installs, runs the whole test suite
VENV ?= .venv
PYTHON := $(VENV)/bin/python
REQS := requirements.txt requirements-nodeps.txt
STAMP := $(VENV)/.installed-$(shell cat $(REQS) | sha1sum | cut -c1-12)

.PHONY: install demo test lint bench

$(STAMP): $(REQS)
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(PYTHON) -m ace_core demo

test: $(STAMP)
	$(PYTHON) -m pytest

lint: $(STAMP)
	$(PYTHON) -m ruff check ace_core tests bench
	$(PYTHON) -m ruff format --check ace_core tests bench

bench: $(STAMP)
	$(PYTHON) -m ace_core bench
