"""A small CNN trained on synthetic images, measured with footprint.

Three stages — load, train (with one scope per epoch and a validation inside each), evaluate
— with the loss and accuracy (and time to accuracy) of every epoch, the final confusion matrix,
the hyperparameters and the saved model as an artifact. Run it under ``footprint run`` so that
the stages and values land in the same run as the process metrics sampled from outside::

    footprint run -o cnn.db -n cnn -- python3 examples/pytorch_cnn/train.py --epochs 3
    python3 -m footprint run -o cnn.db -- examples/pytorch_cnn/train.py --epochs 3
    footprint show -o cnn.db last

Started alone (``python3 train.py``), it creates a run of its own in ``--db`` (default
``$FOOTPRINT_DB`` or ``./footprint.db``) and samples its own process.

The data are 28×28 single-channel images of 10 classes: each class is a fixed random pattern,
each image its class's pattern plus Gaussian noise, so the network learns in a few epochs on
a CPU. Needs Debian's ``python3-torch`` (CPU is enough).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import footprint as fp

CLASSES = [str(i) for i in range(10)]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--samples", type=int, default=2000, help="images in all (80%% train)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--noise", type=float, default=1.5, help="std of the noise on each image")
    p.add_argument("--target-accuracy", type=float, default=0.9)
    p.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--db", default=None, help="database when not under footprint run")
    p.add_argument("--model-out", default=None, help="save the trained model here")
    return p.parse_args()


args = parse_args()
torch.manual_seed(args.seed)
torch.set_num_threads(args.threads)

bm = fp.Benchmark(args.db, description="2-conv CNN on synthetic 28x28 images",
                  name="pytorch_cnn", params=vars(args))
# Finer sampling of the process while the stages run (ignored under footprint run, whose
# intervals apply).
STAGE_METRICS = [fp.Time(), fp.CPU(interval=0.05), fp.Memory(interval=0.05)]
loss_tracker = fp.LossTracker(bm)
tta_tracker = fp.TTATracker(bm, target=args.target_accuracy)


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3)  # 28 -> 26, pooled to 13
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3)  # 13 -> 11, pooled to 5
        self.fc = nn.Linear(16 * 5 * 5, len(CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


@fp.supervise(STAGE_METRICS, bm, name="load")
def load_data() -> tuple[DataLoader, DataLoader]:
    """Synthetic images: class pattern + noise, split 80/20."""
    g = torch.Generator().manual_seed(args.seed)
    patterns = torch.randn(len(CLASSES), 1, 28, 28, generator=g)
    labels = torch.randint(0, len(CLASSES), (args.samples,), generator=g)
    images = patterns[labels] + args.noise * torch.randn(args.samples, 1, 28, 28, generator=g)
    split = int(0.8 * args.samples)
    train = TensorDataset(images[:split], labels[:split])
    test = TensorDataset(images[split:], labels[split:])
    return (DataLoader(train, batch_size=args.batch_size, shuffle=True, generator=g),
            DataLoader(test, batch_size=256))


def predict(model: nn.Module, loader: DataLoader) -> tuple[torch.Tensor, torch.Tensor]:
    model.eval()
    predicted, actual = [], []
    with torch.no_grad():
        for x, y in loader:
            predicted.append(model(x).argmax(dim=1))
            actual.append(y)
    model.train()
    return torch.cat(predicted), torch.cat(actual)


@fp.supervise(STAGE_METRICS, bm, name="train")
def train(model: nn.Module, train_loader: DataLoader, test_loader: DataLoader) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        with bm.scope("epoch"):
            total, batches = 0.0, 0
            for x, y in train_loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                total += loss.item()
                batches += 1
            loss_tracker.track(total / batches, step=epoch)
            with bm.scope("validate"):
                predicted, actual = predict(model, test_loader)
                tta_tracker.track((predicted == actual).float().mean().item(), step=epoch)
        print(f"epoch {epoch}: loss {total / batches:.4f}", flush=True)


@fp.supervise(STAGE_METRICS, bm, name="evaluate")
def evaluate(model: nn.Module, test_loader: DataLoader) -> float:
    predicted, actual = predict(model, test_loader)
    matrix = torch.zeros(len(CLASSES), len(CLASSES), dtype=torch.int64)
    for t, p in zip(actual.tolist(), predicted.tolist()):
        matrix[t, p] += 1  # row: true class, column: predicted
    fp.ConfusionMatrixTracker(bm).track(matrix.numpy(), CLASSES)
    return (predicted == actual).float().mean().item()


def main() -> None:
    start = time.perf_counter()
    train_loader, test_loader = load_data()
    model = SmallCNN()
    train(model, train_loader, test_loader)
    accuracy = evaluate(model, test_loader)
    with fp.HyperparameterTracker(bm, ["lr", "batch_size", "epochs"], target="accuracy",
                                  low_means_good=False) as hp:
        hp.track({"lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs,
                  "accuracy": accuracy})
    if args.model_out:
        torch.save(model.state_dict(), args.model_out)
        bm.artifact("model", args.model_out)
    tta = tta_tracker.time_to_accuracy
    reached = "not reached" if tta is None else f"{tta:.2f} s after the start"
    print(f"test accuracy {accuracy:.3f}; time to {args.target_accuracy:.0%}: {reached}; "
          f"{time.perf_counter() - start:.1f} s; run {bm.run_id} in {os.path.abspath(bm.db)}",
          flush=True)
    bm.close()


if __name__ == "__main__":
    main()
