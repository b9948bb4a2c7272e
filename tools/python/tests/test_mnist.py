"""Fashion-MNIST trained from Python (tools/python/examples/fashion_mnist_mlp.py, the CLI's
configs/mlp network and settings) on a subset: the bar is for 6,400 samples and one epoch; the full
run (60,000 samples, 5 epochs) reaches the CLI's 87.5-88.2%."""

import importlib.util
import os

import pytest

from conftest import REPO

DATA = "/usr/share/datasets/fashion-mnist"


def example():
    spec = importlib.util.spec_from_file_location("fashion_mnist_mlp",
                                                  REPO / "tools" / "python" / "examples" / "fashion_mnist_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.path.isdir(DATA), reason="Fashion-MNIST is not installed (scripts/setup.sh installs it)")
def test_mlp_learns_fashion_mnist_from_python():
    accuracies = example().train(epochs=1, limit_train=6400, limit_test=2000, seed=1)
    assert accuracies[0] > 0.76, accuracies
