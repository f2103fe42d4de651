/* fashion_mnist_cnn.c - TF's classic two-layer CNN on Fashion-MNIST (fashion_mnist_main.h):
 * 5x5 conv 32 -> max-pool 2 -> 5x5 conv 64 -> max-pool 2 -> dense 1024 -> dropout -> 10, Adam,
 * batch 100; per epoch the training loss, test accuracy and examples/s. The same flags as
 * fashion_mnist (and distributed's cluster flags). */
#include "fashion_mnist_main.h"

int main(int argc, char **argv)
{
    return fashion_main(argc, argv, "cnn");
}
