"""Small CNN on synthetic 3x16x16 colour "textures" (four classes: stripes or blobs, warm or cold), torchvision style.

Pixels are in [0, 1] as ``ToTensor`` gives them; the per-channel mean and std are computed on the training images
and a ``Normalize``-like transform applies them to both splits, through a Dataset that takes a transform.
SGD with momentum, a cosine schedule, nn.CrossEntropyLoss; evaluation in eval mode under torch.no_grad().
"""

import argparse
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.as_tensor(mean).view(-1, 1, 1)
        self.std = torch.as_tensor(std).view(-1, 1, 1)

    def __call__(self, image):
        return (image - self.mean) / self.std


class Textures(Dataset):
    def __init__(self, images, labels, transform=None):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[index]


def synthetic_textures(count, seed):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (count,), generator=generator)
    grid = torch.arange(16.0)
    stripes = (torch.sin(grid * math.pi / 2).view(1, 16) * torch.ones(16, 1) + 1) / 2
    blobs = (torch.cos(grid * math.pi / 8).view(16, 1) * torch.cos(grid * math.pi / 8).view(1, 16) + 1) / 2
    pattern = torch.where((labels % 2 == 0).view(-1, 1, 1), stripes, blobs)
    warm = torch.tensor([0.9, 0.5, 0.2]).view(1, 3, 1, 1)
    cold = torch.tensor([0.2, 0.5, 0.9]).view(1, 3, 1, 1)
    tint = torch.where((labels < 2).view(-1, 1, 1, 1), warm, cold)
    images = 0.3 + 0.5 * tint * pattern.unsqueeze(1) + 0.08 * torch.randn(count, 3, 16, 16, generator=generator)
    return images.clamp(0, 1), labels


class SmallCNN(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )  # fmt: skip
        self.classifier = nn.Linear(32, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def train_one_epoch(model, loader, criterion, optimizer, scheduler):
    model.train()
    running = 0.0
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        scheduler.step()
        running += loss.item()
    return running / len(loader)


def evaluate(model, loader, criterion):
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for images, labels in loader:
            output = model(images)
            total_loss += criterion(output, labels).item() * len(labels)
            correct += (output.argmax(1) == labels).sum().item()
            seen += len(labels)
    return total_loss / seen, correct / seen


def main():
    parser = argparse.ArgumentParser(description="CNN on synthetic textures")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    train_images, train_labels = synthetic_textures(640, seed=1)
    test_images, test_labels = synthetic_textures(256, seed=2)
    mean, std = train_images.mean(dim=(0, 2, 3)), train_images.std(dim=(0, 2, 3))
    normalize = Normalize(mean, std)
    train_set = Textures(train_images, train_labels, transform=normalize)
    test_set = Textures(test_images, test_labels, transform=normalize)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=128)

    model = SmallCNN()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(train_loader))
    for epoch in range(1, args.epochs + 1):
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer, scheduler)
        test_loss, accuracy = evaluate(model, test_loader, criterion)
        print(f"epoch {epoch}: train loss: {train_loss:.4f} test loss {test_loss:.4f} accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
