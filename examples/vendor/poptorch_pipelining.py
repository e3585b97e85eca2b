"""A PopTorch program in the shape of Graphcore's pipelining tutorial (github.com/graphcore/tutorials,
tutorials/pytorch/pipelining): the model split into blocks with `with poptorch.Block("B1"):` inside forward (the
loss joins the last block), a PipelinedExecution of poptorch.Stage("B1").ipu(0) ... Stage("B4").ipu(3),
deviceIterations with gradient accumulation, an asynchronous poptorch.DataLoader with worker processes, the
optimizer state in Streaming Memory, poptorch.set_available_memory on a convolution, outputMode(All), and
inference on options cloned from the training ones. Written for the real SDK; nothing here names accelkit.
The sizes are the tutorial's, scaled down to run in seconds.
"""
import poptorch
import torch
import torch.nn as nn
import torchvision

learning_rate = 0.002
epochs = 1
batch_size = 8
test_batch_size = 8
training_iterations = 5
gradient_accumulation = 4
inference_iterations = 10

transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                            torchvision.transforms.Normalize((0.1307,), (0.3081,))])
train_dataset = torchvision.datasets.MNIST("mnist_data/", train=True, download=True, transform=transform)
test_dataset = torchvision.datasets.MNIST("mnist_data/", train=False, download=True, transform=transform)

train_opts = poptorch.Options()
train_opts.deviceIterations(training_iterations)
train_opts.Training.gradientAccumulation(gradient_accumulation)
training_data = poptorch.DataLoader(train_opts, train_dataset, batch_size=batch_size, shuffle=True,
                                    mode=poptorch.DataLoaderMode.Async, num_workers=16)
test_data = poptorch.DataLoader(poptorch.Options().deviceIterations(inference_iterations), test_dataset,
                                batch_size=test_batch_size, shuffle=True, drop_last=True,
                                mode=poptorch.DataLoaderMode.Async, num_workers=16)


class ConvLayer(nn.Module):
    def __init__(self, in_channels, num_filters, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = poptorch.set_available_memory(self.conv(x), 0.3)
        return self.relu(self.pool(x))


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = ConvLayer(1, 10, 5, 2)
        self.layer2 = ConvLayer(10, 20, 5, 2)
        self.layer3 = nn.Linear(320, 256)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(256, 10)

    def forward(self, x):
        with poptorch.Block("B1"):
            x = self.layer1(x)
        with poptorch.Block("B2"):
            x = self.layer2(x)
        with poptorch.Block("B3"):
            x = x.view(-1, 320)
            x = self.layer3_act(self.layer3(x))
        with poptorch.Block("B4"):
            x = self.layer4(x)
        return x


class TrainingModelWithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, args, labels=None):
        output = self.model(args)
        if labels is None:
            return output
        with poptorch.Block("B4"):
            loss = self.loss(output, labels)
        return output, loss


def get_training_model(opts, model):
    """Wrap a model with the loss and the optimiser into a poptorch.trainingModel"""
    model_with_loss = TrainingModelWithLoss(model)
    return poptorch.trainingModel(model_with_loss, opts,
                                  optimizer=poptorch.optim.AdamW(model.parameters(), lr=learning_rate))


def accuracy(predictions, labels):
    _, ind = torch.max(predictions, 1)
    labels = labels[-predictions.size()[0]:]
    return torch.sum(torch.eq(ind, labels)).item() / labels.size()[0] * 100.0


torch.manual_seed(0)
model = Network()

train_opts = poptorch.Options()
pipelined_strategy = poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0), poptorch.Stage("B2").ipu(1),
                                                 poptorch.Stage("B3").ipu(2), poptorch.Stage("B4").ipu(3))
train_opts.setExecutionStrategy(pipelined_strategy)
train_opts.deviceIterations(training_iterations)
train_opts.Training.gradientAccumulation(gradient_accumulation)
train_opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
train_opts.outputMode(poptorch.OutputMode.All)  # Warning: impacts performance

training_model = get_training_model(train_opts, model)
mean_losses = []
for epoch in range(1, epochs + 1):
    for data, labels in training_data:
        preds, losses = training_model(data, labels)
        mean_losses.append(torch.mean(losses).item())
    print(f"Epoch {epoch}/{epochs} Loss:{mean_losses[-1]:0.4f} | Accuracy:{accuracy(preds, labels):0.2f}%")
training_model.detachFromDevice()
print(f"first loss {mean_losses[0]:.4f} last loss {mean_losses[-1]:.4f}")

inf_options = train_opts.clone()
inf_options.Training.gradientAccumulation(1)
inf_options.deviceIterations(inference_iterations)
inference_model = poptorch.inferenceModel(model, inf_options)
sum_acc = 0.0
for data, labels in test_data:
    output = inference_model(data)
    sum_acc += accuracy(output, labels)
print(f"Accuracy on test set: {sum_acc / len(test_data):0.2f}%")
