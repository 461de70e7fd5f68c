"""The examples in the package's docstrings run."""

import doctest
import importlib

import pytest

MODULES = ["pot", "pot._core", "pot.hash", "pot.merkle", "pot.losscheck", "pot.ledger", "pot.safetensors",
           "pot.spec"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0
