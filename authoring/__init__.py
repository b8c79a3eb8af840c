"""What the workbook's maintainers and CI run, and a learner never needs: the tools that keep
the notebooks' two editions in step (``editions``), the seed audit in notebooks/README.md
(``seed_audit``), the committed reference outputs (``outputs``), each notebook's study time
(``study_time``) and the paragraph that opens its exercises (``exercise_intro``).

They sit beside the ``labkit`` package, not in it: ``pip install labkit`` does not ship them.
They import labkit, never the other way round. Run them from the repository's root, with the
project installed with its ``authoring`` extra (``pip install -e ".[authoring]"``; the ``test``
extra lists the same packages): ``python -m authoring.editions sync 05``, ``python -m authoring.outputs
refresh 05``, ``python -m authoring.seed_audit``, ``python -m authoring.study_time --write``,
``python -m authoring.exercise_intro --write``."""
