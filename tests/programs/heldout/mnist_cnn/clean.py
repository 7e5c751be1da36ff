"""MNIST-like CNN classifier (clean): argparse + main(), train()/test() per epoch as in the PyTorch example."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from data import make_digits
from model import Net
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    criterion = nn.CrossEntropyLoss()
    total, batches = 0.0, 0
    for data, target in train_loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"Train epoch {epoch} loss: {total / batches:.4f}")


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            pred = model(data).argmax(dim=1)
            correct += (pred == target).sum().item()
    print(f"Test accuracy: {correct / len(test_loader.dataset):.3f}")


def main():
    parser = argparse.ArgumentParser(description="MNIST-like CNN")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    images, labels = make_digits(2400)
    x_train, y_train = images[:2000], labels[:2000]
    x_test, y_test = images[2000:], labels[2000:]
    print(f"{len(y_train)} training images, {len(y_test)} test images")
    mean, std = x_train.mean(), x_train.std()
    x_train = (x_train - mean) / std
    x_test = (x_test - mean) / std

    train_set = TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    test_set = TensorDataset(torch.from_numpy(x_test), torch.from_numpy(y_test))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=256)

    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.5)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
