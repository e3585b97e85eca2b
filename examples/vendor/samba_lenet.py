"""A SambaFlow app in the shape of SambaNova's lenet/lenet.py (github.com/sambanova/tutorials) together with the
seed snippet's loop: parse_app_args(dev_mode=True, common_parser_fn=..., test_parser_fn=..., run_parser_fn=...)
with the app's own -b/--batch-size, sambaflow's __version__ in the PEF metadata, a LeNet whose loss is
computed in forward, compile with squeeze_bs_dim, then `run` trains with SambaLoader and
samba.session.run(..., section_types=["fwd", "bckwd", "opt"]) and `run --inference` predicts with
section_types=["fwd"] on the same (training) PEF. Written for the real SDK; nothing here names accelkit.

    python lenet.py compile -b 32 -p out/lenet/lenet.pef
    python lenet.py run -b 32 -p out/lenet/lenet.pef -e 1
    python lenet.py run --inference -b 32 -p out/lenet/lenet.pef --init-ckpt-path lenet_trained.pt
"""
import argparse

import sambaflow.samba.utils as utils
import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms
from sambaflow import __version__ as sambaflow_version
from sambaflow import samba
from sambaflow.samba.sambaloader import SambaLoader
from sambaflow.samba.utils.argparser import parse_app_args
from sambaflow.samba.utils.pef_utils import get_pefmeta


class LeNet(nn.Module):
    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=3, padding=1, bias=False)
        self.maxpool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=3, padding=1, bias=False)
        self.maxpool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 7 * 7, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, inputs, labels):
        x = self.maxpool1(self.conv1(inputs).relu())
        x = self.maxpool2(self.conv2(x).relu())
        x = torch.reshape(x, [x.shape[0], -1])
        out = self.fc3(self.fc2(self.fc1(x).relu()).relu())
        return self.criterion(out, labels), out


def get_inputs(params):
    images = samba.randn(params["batch_size"], 1, 28, 28, name="image", batch_dim=0)
    labels = samba.randint(params["num_classes"], (params["batch_size"],), name="label", batch_dim=0)
    return images, labels


def get_loader(params, train: bool):
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,)),
                                    lambda x: x.reshape((1, 28, 28))])
    dataset = torchvision.datasets.MNIST(params["data_dir"], train=train, transform=transform, download=True)
    return torch.utils.data.DataLoader(dataset, batch_size=params["batch_size"], drop_last=True, shuffle=train)


def train(model, params) -> None:
    hyperparam_dict = {"lr": params["lr"], "momentum": params["momentum"], "weight_decay": params["weight_decay"]}
    losses = []
    for _epoch in range(params["num_epochs"]):
        for images, labels in SambaLoader(get_loader(params, train=True), ["image", "label"]):
            loss, outputs = samba.session.run(input_tensors=[images, labels], output_tensors=model.output_tensors,
                                              hyperparam_dict=hyperparam_dict, section_types=["fwd", "bckwd", "opt"])
            losses.append(float(samba.to_torch(loss)))
    samba.session.to_cpu(model)
    print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")


def batch_predict(model, params) -> None:
    correct = total = 0
    for images, labels in get_loader(params, train=False):
        sn_images = samba.from_torch_tensor(images, name="image", batch_dim=0)
        sn_labels = samba.from_torch_tensor(labels, name="label", batch_dim=0)
        loss, predictions = samba.session.run(input_tensors=[sn_images, sn_labels],
                                              output_tensors=model.output_tensors, section_types=["fwd"])
        correct += int((samba.to_torch(predictions).argmax(1) == labels).sum())
        total += labels.shape[0]
    print(f"predicted {total} images, accuracy {100.0 * correct / total:.1f}%")


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-classes", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("-b", "--batch-size", type=int, default=32)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=0.0)


def add_run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-e", "--num-epochs", type=int, default=1)
    parser.add_argument("--data-dir", type=str, default="./data")
    parser.add_argument("--init-ckpt-path", type=str, default="")


def main() -> None:
    args = parse_app_args(dev_mode=True, common_parser_fn=add_common_args, test_parser_fn=add_run_args,
                          run_parser_fn=add_run_args)
    utils.set_seed(42)
    params = vars(args)
    model = LeNet(args.num_classes)
    samba.from_torch_model_(model)
    inputs = get_inputs(params)
    optimizer = samba.optim.SGD(model.parameters(), lr=0.0) if not args.inference else None
    if args.command == "compile":
        pef_metadata = get_pefmeta(args, model)
        pef_metadata["sambaflow_version"] = sambaflow_version
        samba.session.compile(model, inputs, optimizer, name="lenet", app_dir=utils.get_file_dir(__file__),
                              squeeze_bs_dim=True, config_dict=vars(args), pef_metadata=pef_metadata)
    elif args.command == "run":
        if params["init_ckpt_path"]:  # load the weights first, then trace: tracing syncs them to the RDU
            model.load_state_dict(torch.load(params["init_ckpt_path"]))
        utils.trace_graph(model, inputs, optimizer, pef=params["pef"], mapping=params["mapping"])
        if args.inference:
            batch_predict(model, params)
        else:
            train(model, params)
            torch.save(model.state_dict(), "lenet_trained.pt")


if __name__ == "__main__":
    main()
