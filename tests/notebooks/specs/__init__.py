"""One module per tutorial notebook, ``nbNN_<topic>.py``, each defining ``NAME`` (the
``.ipynb`` file name) and ``CELLS`` (the cells in order, built with ``md`` and ``code``
from ``._cells``). ``build_notebooks.py`` finds them by that file name pattern, so a new
notebook is a new module here and nothing else."""
