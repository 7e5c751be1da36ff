"""Training helpers: one epoch of training, evaluation, and fit() with early stopping on the validation loss."""

import copy

import torch


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        pred = model(x)
        loss = criterion(pred, y)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total += loss.item() * x.size(0)
        count += x.size(0)
    return total / count


@torch.no_grad()
def evaluate(model, loader, criterion):
    model.eval()
    total, count = 0.0, 0
    for x, y in loader:
        total += criterion(model(x), y).item() * x.size(0)
        count += x.size(0)
    return total / count


def fit(model, train_loader, val_loader, criterion, optimizer, epochs=10, patience=3):
    best_val, best_state, bad_epochs = float("inf"), None, 0
    for epoch in range(1, epochs + 1):
        train_loss = train_one_epoch(model, train_loader, criterion, optimizer)
        val_loss = evaluate(model, val_loader, criterion)
        print(f"epoch {epoch:2d} | train loss: {train_loss:.4f} | val mse {val_loss:.4f}")
        if val_loss < best_val:
            best_val, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                print(f"early stopping at epoch {epoch}")
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    return best_val
