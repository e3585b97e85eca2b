"""A PopTorch program in the shape of Graphcore's mixed-precision tutorial (github.com/graphcore/tutorials,
tutorials/pytorch/mixed_precision): the model in fp16 (model.half()), the data cast to fp16 by the transform,
poptorch.optim.AdamW with loss_scaling and fp32 accumulators (accum_type), Precision options, and an
asynchronous poptorch.DataLoader with gradient accumulation. Written for the real SDK.
"""
import poptorch
import torch
import torch.nn as nn
import torchvision


class CustomModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(4)
        self.fc = nn.Linear(4 * 8 * 8, 10)
        self.relu = nn.ReLU()
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        x = self.pool(self.relu(self.conv(x)))
        x = self.fc(torch.flatten(x, 1))
        if self.training:
            return x, self.loss(x, labels)
        return x


torch.manual_seed(0)
model = CustomModel()
model = model.half()

transform = torchvision.transforms.Compose([torchvision.transforms.ToTensor(),
                                            torchvision.transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                                            torchvision.transforms.ConvertImageDtype(torch.half)])
train_dataset = torchvision.datasets.CIFAR10(root="./cifar10", train=True, download=True, transform=transform)

optimizer = poptorch.optim.AdamW(model.parameters(), lr=0.002, loss_scaling=1024, accum_type=torch.float32)

opts = poptorch.Options()
opts.Precision.setPartialsType(torch.half)
opts.Precision.enableStochasticRounding(True)
opts.Training.gradientAccumulation(2)
train_dataloader = poptorch.DataLoader(opts, train_dataset, batch_size=16, shuffle=True,
                                       mode=poptorch.DataLoaderMode.Async)

poptorch_model = poptorch.trainingModel(model, options=opts, optimizer=optimizer)
losses = []
for _epoch in range(2):
    for data, labels in train_dataloader:
        output, loss = poptorch_model(data, labels)
        losses.append(float(loss))
poptorch_model.detachFromDevice()
assert all(loss == loss for loss in losses), "a NaN loss"
print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
