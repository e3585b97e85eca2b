"""A PopTorch program in the shape of Graphcore's PyTorch basics walkthrough and MNIST example
(github.com/graphcore/tutorials, tutorials/pytorch/basics and simple_applications/pytorch/mnist): the loss is
computed in forward, poptorch.Options with deviceIterations and outputMode, poptorch.DataLoader,
poptorch.optim.SGD, trainingModel, then inferenceModel on the trained weights. Written for the real SDK.
"""
import poptorch
import torch
import torch.nn as nn
import torchvision


class ClassificationModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 5, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(5, 12, 5)
        self.norm = nn.GroupNorm(3, 12)
        self.fc1 = nn.Linear(972, 100)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(100, 10)
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.loss = nn.NLLLoss()

    def forward(self, x, labels=None):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.norm(self.relu(self.conv2(x)))
        x = torch.flatten(x, start_dim=1)
        x = self.relu(self.fc1(x))
        x = self.log_softmax(self.fc2(x))
        if self.training:
            return x, self.loss(x, labels)
        return x


transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                            torchvision.transforms.Normalize((0.5,), (0.5,))])
train_dataset = torchvision.datasets.FashionMNIST("~/.torch/datasets", transform=transform, download=True, train=True)
test_dataset = torchvision.datasets.FashionMNIST("~/.torch/datasets", transform=transform, download=True, train=False)

torch.manual_seed(0)
model = ClassificationModel()
model.train()

opts = poptorch.Options()
opts.deviceIterations(4)
opts.randomSeed(42)
train_dataloader = poptorch.DataLoader(opts, train_dataset, batch_size=16, shuffle=True)

optimizer = poptorch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
poptorch_model = poptorch.trainingModel(model, options=opts, optimizer=optimizer)

losses = []
for _epoch in range(2):
    for data, labels in train_dataloader:
        output, loss = poptorch_model(data, labels)
        losses.append(float(loss))
poptorch_model.detachFromDevice()
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")

model = model.eval()
inference_opts = poptorch.Options().deviceIterations(5)
inference_opts.outputMode(poptorch.OutputMode.All)
poptorch_model_inf = poptorch.inferenceModel(model, options=inference_opts)
test_dataloader = poptorch.DataLoader(inference_opts, test_dataset, batch_size=20)

correct = total = 0
for data, labels in test_dataloader:
    output = poptorch_model_inf(data)
    assert output.shape[0] == labels.shape[0]  # OutputMode.All: every device iteration's outputs
    correct += int((output.argmax(dim=1) == labels).sum())
    total += labels.shape[0]
poptorch_model_inf.detachFromDevice()
print(f"accuracy {100.0 * correct / total:.1f}%")
