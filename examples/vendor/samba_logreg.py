"""A SambaFlow app in the shape of SambaNova's hello_world/logreg.py (github.com/sambanova/tutorials):
the same imports, parse_app_args with the app's own arguments, named inputs made with samba.randn(...)
.bfloat16().float(), from_torch_model_, samba.optim.SGD, compile to a PEF, then trace_graph and a loop of
samba.session.run(input_tensors=..., output_tensors=..., hyperparam_dict=..., data_parallel=...,
reduce_on_rdu=...) over torchvision's MNIST. Written for the real SDK; nothing here names accelkit.

    python logreg.py compile -b 32 -p out/logreg/logreg.pef
    python logreg.py run -b 32 -p out/logreg/logreg.pef --num-steps 40
"""
import argparse
import sys

import sambaflow.samba.utils as utils
import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from sambaflow import samba
from sambaflow.samba.utils.argparser import parse_app_args, parse_yaml_to_args
from sambaflow.samba.utils.dataset.mnist import dataset_transform
from sambaflow.samba.utils.pef_utils import get_pefmeta


class LogisticRegression(nn.Module):
    def __init__(self, num_features: int, num_classes: int, bias: bool) -> None:
        super().__init__()
        self.linear = nn.Linear(num_features, num_classes, bias=bias)
        self.loss_fn = nn.CrossEntropyLoss()

    def forward(self, images: torch.Tensor, labels: torch.Tensor):
        logits = self.linear(images)
        return self.loss_fn(logits, labels), logits


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--num-epochs", "-e", type=int, default=1)
    parser.add_argument("--num-steps", type=int, default=-1)
    parser.add_argument("--num-features", type=int, default=784)
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--yaml-config", default=None, type=str)
    parser.add_argument("--data-dir", "--data-folder", type=str, default="mnist_data")
    parser.add_argument("--bias", action="store_true")


def loaders(args):
    train_set = torchvision.datasets.MNIST(root=args.data_dir, train=True, transform=dataset_transform(vars(args)),
                                           download=True)
    test_set = torchvision.datasets.MNIST(root=args.data_dir, train=False, transform=dataset_transform(vars(args)))
    return (torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True),
            torch.utils.data.DataLoader(test_set, batch_size=args.batch_size, shuffle=False, drop_last=True))


def train(args, model, output_tensors) -> None:
    train_loader, test_loader = loaders(args)
    hyperparam_dict = {"lr": args.lr, "momentum": args.momentum, "weight_decay": args.weight_decay}
    losses = []
    for epoch in range(args.num_epochs):
        for i, (images, labels) in enumerate(train_loader):
            if 0 < args.num_steps <= epoch * len(train_loader) + i:
                break
            sn_images = samba.from_torch_tensor(images, name="image", batch_dim=0)
            sn_labels = samba.from_torch_tensor(labels, name="label", batch_dim=0)
            loss, outputs = samba.session.run(input_tensors=[sn_images, sn_labels], output_tensors=output_tensors,
                                              hyperparam_dict=hyperparam_dict, data_parallel=args.data_parallel,
                                              reduce_on_rdu=args.reduce_on_rdu)
            loss, outputs = samba.to_torch(loss), samba.to_torch(outputs)
            losses.append(float(loss.mean()))
        samba.session.to_cpu(model)
        with torch.no_grad():
            correct = total = 0
            for images, labels in test_loader:
                loss, outputs = model(images, labels)
                correct += int((samba.to_torch(outputs).argmax(1) == labels).sum())
                total += labels.size(0)
        if args.local_rank <= 0:
            print(f"Test Accuracy: {100.0 * correct / total:.2f}")
    print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")


def main(argv):
    utils.set_seed(256)
    args = parse_app_args(argv=argv, common_parser_fn=add_args)
    args = parse_yaml_to_args(args.yaml_config, args) if args.yaml_config else args
    args.local_rank = dist.get_rank() if dist.is_initialized() else -1

    ipt = samba.randn(args.batch_size, args.num_features, name="image", batch_dim=0).bfloat16().float()
    tgt = samba.randint(args.num_classes, (args.batch_size,), name="label", batch_dim=0)
    inputs = (ipt, tgt)

    model = LogisticRegression(args.num_features, args.num_classes, args.bias)
    samba.from_torch_model_(model)
    optimizer = None if args.inference else samba.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                                            weight_decay=args.weight_decay)
    if args.command == "compile":
        samba.session.compile(model, inputs, optimizer, name="logreg", app_dir=utils.get_file_dir(__file__),
                              config_dict=vars(args), pef_metadata=get_pefmeta(args, model))
    else:
        traced_outputs = utils.trace_graph(model, inputs, optimizer, pef=args.pef, mapping=args.mapping)
        train(args, model, traced_outputs)


if __name__ == "__main__":
    main(sys.argv[1:])
