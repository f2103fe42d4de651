/* fashion_mnist.c - the 784-512-512-10 ReLU MLP on Fashion-MNIST (fashion_mnist_main.h). */
#include "fashion_mnist_main.h"

int main(int argc, char **argv)
{
    return fashion_main(argc, argv, "mlp");
}
