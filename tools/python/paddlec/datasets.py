"""Datasets the machine has: Fashion-MNIST (and MNIST-layout directories) through the C++ IDX reader."""

from paddlec import _core

__all__ = ["FASHION_MNIST_DIR", "load_image_dataset", "fashion_mnist"]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def load_image_dataset(directory, normalize="unit"):
    """Reads ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` from ``directory``: returns
    ((train_images, train_labels), (test_images, test_labels)), images float32 [N, H, W] scaled to
    [0, 1] ('unit') or standardized ('meanstd'), labels int64 [N]."""
    d = _core.load_image_dataset(str(directory), normalize)
    return ((d["train"]["images"], d["train"]["labels"]), (d["test"]["images"], d["test"]["labels"]))


def fashion_mnist(normalize="unit", directory=FASHION_MNIST_DIR):
    """Fashion-MNIST as installed by scripts/setup.sh (Debian's dataset-fashion-mnist)."""
    return load_image_dataset(directory, normalize)
