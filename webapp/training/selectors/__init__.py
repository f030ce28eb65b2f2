"""Reads for training runs (selectors). Callers import from the module that holds a name; this
package holds nothing itself.

``runs``         the grids available here, the runs list and one run, each run's best outcome
                 on validation days and the policy its validations kept (``best.pt``)
``metrics``      the metrics' readable names and groups, a run's metric points a page at a time
``checkpoints``  a run's newest checkpoint, one checkpoint
``evaluations``  a run's evaluations, one evaluation, its results as the run page's table
``deployments``  the current deployment and the others, outcomes on test days, the deploy guard
``live``         the snapshot a run page starts from, the rows newer than a cursor
``compare``      the comparison page: runs, curves, evaluations side by side, config differences
``run_filters``  the runs list filtered and sorted, and the values its filters offer
``run_labels``   a run's recipe in words
``run_exports``  a run's metrics and episodes as CSV rows
``mines``        mines of expert decisions: finished ones on disk, launches in rows
"""
