"""Sentiment LSTM, bug: the optimizer is given only the linear head's parameters; the embedding and the LSTM never
learn.

Symptom (plain run): the loss creeps from 0.69 to 0.67 and validation accuracy stays near 0.60; the clean run reaches
1.0.
"""

import argparse

import torch
import torch.nn as nn
from model import SentimentLSTM
from reviews import VOCAB_SIZE, ReviewDataset, make_reviews
from torch.utils.data import DataLoader


def train_epoch(model, loader, criterion, optimizer, device):
    model.train()
    epoch_loss = 0.0
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        optimizer.zero_grad()
        logits = model(tokens)
        loss = criterion(logits, labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(loader)


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            predictions = (model(tokens) > 0).float()
            correct += (predictions == labels).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="Sentiment LSTM")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.005)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    tokens, labels = make_reviews(1200)
    train_data = ReviewDataset(tokens[:1000], labels[:1000])
    valid_data = ReviewDataset(tokens[1000:], labels[1000:])
    train_loader = DataLoader(train_data, batch_size=args.batch_size, shuffle=True)
    valid_loader = DataLoader(valid_data, batch_size=100)

    model = SentimentLSTM(VOCAB_SIZE).to(device)
    criterion = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.Adam(model.fc.parameters(), lr=args.lr)  # BUG: training-logic embedding and LSTM left out
    for epoch in range(args.epochs):
        train_loss = train_epoch(model, loader=train_loader, criterion=criterion, optimizer=optimizer, device=device)
        accuracy = evaluate(model, valid_loader, device)
        print(f"epoch {epoch + 1} loss: {train_loss:.4f} valid acc: {accuracy:.3f}")


if __name__ == "__main__":
    main()
