# GridACE: two commands on a fresh machine.
#   make demo   creates .venv if missing, installs, runs the demo
#   make test   creates .venv if missing, installs, runs the whole test suite
VENV ?= .venv
PYTHON := $(VENV)/bin/python
REQS := requirements.txt requirements-nodeps.txt
STAMP := $(VENV)/.installed-$(shell cat $(REQS) | sha1sum | cut -c1-12)

.PHONY: install demo test lint bench days-venv

$(STAMP): $(REQS)
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

# the days interpreter: chronix2grid and the older PyPSA it needs, for `python -m ace_core days`;
# its economic dispatch calls the CBC solver (Debian: apt-get install coinor-cbc)
DAYS_VENV ?= .venv-days
DAYS_REQS := requirements-days.txt requirements-days-nodeps.txt
DAYS_STAMP := $(DAYS_VENV)/.installed-$(shell cat $(DAYS_REQS) | sha1sum | cut -c1-12)

$(DAYS_STAMP): $(DAYS_REQS)
	test -x $(DAYS_VENV)/bin/python || python3 -m venv $(DAYS_VENV)
	$(DAYS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-days.txt
	$(DAYS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-days-nodeps.txt
	rm -f $(DAYS_VENV)/.installed-*
	touch $@

days-venv: $(DAYS_STAMP)

# the web demo: SQLite, in-memory channel layer, workers in the background, offline LLM
# (options of manage.py demo in DEMO_ARGS, e.g. make demo DEMO_ARGS="--live-policy runs/bc36")
DEMO_ARGS ?=
demo: $(STAMP)
	$(PYTHON) manage.py demo $(DEMO_ARGS)

# the core alone: train a small policy and compare it with the baselines
demo-cli: $(STAMP)
	$(PYTHON) -m ace_core demo

# the real services: PostgreSQL and Redis on this machine unless the environment says otherwise;
# one test process per core (pytest-xdist, a test module per process at a time, each process with
# its own test database and channel-layer prefix); TEST_WORKERS=0 runs them all in one process
TEST_WORKERS ?= auto
test: $(STAMP) $(DAYS_STAMP)
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} \
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} \
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(PYTHON) -m ruff check ace_core webapp manage.py tests bench
	$(PYTHON) -m ruff format --check ace_core webapp manage.py tests bench
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PYTHON) -m ace_core bench
	$(PYTHON) bench/live_recommend.py --steps 288
	$(PYTHON) bench/whatif_cost.py
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} \
	REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} \
	sh -c '$(PYTHON) bench/web_recovery.py && $(PYTHON) bench/live_fanout.py --clients 200 --seconds 60'
