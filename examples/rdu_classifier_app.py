"""A SambaFlow-style application, as workshop material writes them, aimed at accelkit's RDU facade.

The import lines are the only accelkit-specific part; the rest follows the shape of a
SambaNova tutorial app: fake named inputs with a batch dimension, compile to an artifact,
then trace against that artifact and run sections in a hand-written loop.

    python rdu_classifier_app.py compile -b 32 -mb 4 -p out/classifier.pef
    python rdu_classifier_app.py test -b 32 -mb 4 -p out/classifier.pef        # each step against plain PyTorch
    python rdu_classifier_app.py run -b 32 -mb 4 -p out/classifier.pef
    python rdu_classifier_app.py compile -b 32 --inference -p out/classifier_inf.pef
    python rdu_classifier_app.py run -b 32 --inference -p out/classifier_inf.pef
"""
import sys

import torch
from torch import nn

import accelkit.samba as samba
from accelkit.samba import utils
from accelkit.samba.utils import parse_app_args
from accelkit.samba.sambaloader import SambaLoader


class GatedClassifier(nn.Module):
    """Two hidden layers with a skip path; the loss is computed inside forward."""

    def __init__(self, in_features: int, width: int, classes: int) -> None:
        super().__init__()
        self.inp = nn.Linear(in_features, width)
        self.mid = nn.Linear(width, width)
        self.out = nn.Linear(width, classes)
        self.norm = nn.LayerNorm(width)
        self.act = nn.GELU(approximate="tanh")
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        h = self.act(self.inp(x))
        h = self.norm(self.mid(h)) + h
        logits = self.out(h)
        return self.loss_fn(logits, y), logits


def dataset(n: int, in_features: int, classes: int) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(classes, in_features, generator=g) * 3
    y = torch.randint(classes, (n,), generator=g)
    x = centers[y] + torch.randn(n, in_features, generator=g)
    return torch.utils.data.TensorDataset(x, y)


def main(argv) -> None:
    args = parse_app_args(argv)
    in_features, width, classes = 20, 64, 4

    x = samba.randn(args.batch_size, in_features, name="features", batch_dim=0)
    y = samba.randint(classes, (args.batch_size,), name="labels", batch_dim=0)
    inputs = (x, y)

    model = GatedClassifier(in_features, width, classes)
    samba.from_torch_model_(model)
    optim = None if args.inference else samba.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    if args.command == "compile":
        samba.session.compile(model=model, inputs=inputs, optim=optim, name="gated_classifier",
                              init_output_grads=not args.inference, pef=args.pef)
        return

    traced_outputs = utils.trace_graph(model, inputs, optim, pef=args.pef)
    loader = torch.utils.data.DataLoader(dataset(2048, in_features, classes),
                                         batch_size=args.batch_size, drop_last=True)
    sections = ["fwd"] if args.inference else ["fwd", "bckwd", "opt"]
    losses = []
    for epoch in range(3):
        for xb, yb in SambaLoader(loader, ["features", "labels"]):
            loss, _ = samba.session.run(input_tensors=[xb, yb], output_tensors=traced_outputs,
                                        section_types=sections)
            losses.append(float(samba.to_torch(loss)))
    samba.session.to_cpu(model)
    print(f"first loss {losses[0]:.4f} last loss {losses[-1]:.4f}")
    print(samba.session.report())  # simulated time and throughput, labelled as modelled


if __name__ == "__main__":
    main(sys.argv[1:])
