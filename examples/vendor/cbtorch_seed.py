"""The Cerebras CS-2 seed snippet's loop: `cerebras.framework.torch` imported as cbtorch, and
`with cbtorch.Session(model, optimizer, criterion, mode="train")` around an ordinary PyTorch loop, then
the same model evaluated with mode="eval". Written for the real SDK; nothing here names accelkit."""
import cerebras.framework.torch as cbtorch
import torch
from torch import nn

torch.manual_seed(0)
centers = torch.randn(4, 16) * 1.5
labels = torch.randint(0, 4, (512,))
features = centers[labels] + torch.randn(512, 16)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

losses = []
with cbtorch.Session(model, optimizer, criterion, mode="train") as session:
    for _epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
print(f"first loss {sum(losses[:4]) / 4:.4f} last loss {sum(losses[-4:]) / 4:.4f}")

correct = 0
with cbtorch.Session(model, optimizer, criterion, mode="eval"), torch.no_grad():
    for x, y in loader:
        correct += int((model(x).argmax(1) == y).sum())
print(f"accuracy {correct / len(loader.dataset):.3f}")
