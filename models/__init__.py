"""The project's reference models, the digits demo and fixture generation (run from the source
tree: ``python -m models.train_digits``). Not a library: the library code is in
:mod:`ort_ops.training`; this folder is not installed.

- :mod:`models.zoo` -- the reference ELU MLP / CNN;
- :mod:`models.train_digits` -- the digits training demo (PyTorch, ORT CPU, ORT CANN);
- :mod:`models.demo_elugrad` -- the CANN article's EluGrad example on the CPU and CANN EPs;
- :mod:`models.fixtures` -- the committed test fixtures and how to rebuild them.
"""
