"""A PopTorch program in the shape of Graphcore's MNIST example (github.com/graphcore/tutorials,
simple_applications/pytorch/mnist/mnist_poptorch.py): its command line, MNIST through torchvision,
poptorch.DataLoader(options=..., dataset=...) with deviceIterations, the loss in a wrapper module, the
training options' outputMode(OutputMode.All) so every device iteration's predictions and losses come back,
trainingModel(model_with_loss, training_opts, optimizer=torch.optim.SGD(...)), then inferenceModel(model).
Written for the real SDK; nothing here names accelkit.

    python poptorch_mnist.py [--batch-size 8] [--device-iterations 50] [--test-batch-size 80] [--epochs 1] [--lr 0.05]
"""
import argparse

import poptorch
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision

parser = argparse.ArgumentParser(description="MNIST training in PopTorch")
parser.add_argument("--batch-size", type=int, default=8, help="batch size for training (default: 8)")
parser.add_argument("--device-iterations", type=int, default=50, help="device iteration (default: 50)")
parser.add_argument("--test-batch-size", type=int, default=80, help="batch size for testing (default: 80)")
parser.add_argument("--epochs", type=int, default=1, help="number of epochs to train (default: 1)")
parser.add_argument("--lr", type=float, default=0.05, help="learning rate (default: 0.05)")
opts = parser.parse_args()

local_dataset_path = "~/.torch/datasets"
transform_mnist = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                                  torchvision.transforms.Normalize((0.1307,), (0.3081,))])
training_dataset = torchvision.datasets.MNIST(local_dataset_path, train=True, download=True, transform=transform_mnist)
test_dataset = torchvision.datasets.MNIST(local_dataset_path, train=False, download=True, transform=transform_mnist)

training_opts = poptorch.Options()
training_opts = training_opts.deviceIterations(opts.device_iterations)
training_data = poptorch.DataLoader(options=training_opts, dataset=training_dataset, batch_size=opts.batch_size,
                                    shuffle=True, drop_last=True)
test_data = poptorch.DataLoader(options=poptorch.Options(), dataset=test_dataset, batch_size=opts.test_batch_size,
                                shuffle=True, drop_last=True)


class Block(nn.Module):
    def __init__(self, in_channels, num_filters, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = Block(1, 8, 3, 2)
        self.layer2 = Block(8, 16, 3, 2)
        self.layer3 = nn.Linear(400, 64)
        self.layer3_act = nn.ReLU()
        self.layer3_dropout = torch.nn.Dropout(0.5)
        self.layer4 = nn.Linear(64, 10)  # logits (Graphcore's example ends in nn.Softmax, which slows its learning)

    def forward(self, x):
        x = self.layer1(x)
        x = self.layer2(x)
        x = x.view(-1, 400)  # flatten
        x = self.layer3_act(self.layer3(x))
        return self.layer4(self.layer3_dropout(x))


class TrainingModelWithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, args, labels=None):
        output = self.model(args)
        if labels is None:
            return output
        loss = self.loss(output, labels)
        return output, loss


def accuracy(predictions, labels):
    _, ind = torch.max(predictions, 1)
    return torch.sum(torch.eq(ind, labels)).item() / labels.size()[0] * 100.0


torch.manual_seed(0)
model = Network()
model_with_loss = TrainingModelWithLoss(model)
training_opts = poptorch.Options().deviceIterations(opts.device_iterations)
training_opts = training_opts.outputMode(poptorch.OutputMode.All)
training_model = poptorch.trainingModel(model_with_loss, training_opts,
                                        optimizer=optim.SGD(model.parameters(), lr=opts.lr))

mean_losses = []
for epoch in range(1, opts.epochs + 1):
    for data, labels in training_data:
        preds, losses = training_model(data, labels)
        assert preds.shape[0] == labels.shape[0] and losses.shape == (opts.device_iterations,)  # OutputMode.All
        mean_losses.append(torch.mean(losses).item())
        print(f"Epoch {epoch} Loss: {mean_losses[-1]:0.4f} | Accuracy: {accuracy(preds, labels):05.2f}%")
training_model.detachFromDevice()
print(f"first loss {mean_losses[0]:.4f} last loss {mean_losses[-1]:.4f}")

model.eval()
inference_model = poptorch.inferenceModel(model)
sum_acc = 0.0
for data, labels in test_data:
    output = inference_model(data)
    sum_acc += accuracy(output, labels)
inference_model.detachFromDevice()
print(f"Accuracy on test set: {sum_acc / len(test_data):0.2f}%")
