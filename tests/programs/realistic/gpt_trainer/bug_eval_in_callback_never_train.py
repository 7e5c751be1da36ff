"""Character-level GPT trained by trainer.Trainer, with an on_batch_end callback that estimates the validation loss
in eval mode and never puts the model back in training mode: Trainer.run() calls model.train() once, before its loop,
so every iteration after the first evaluation trains with dropout off."""

import argparse
import random

import torch
from model import GPT
from torch.utils.data import Dataset
from trainer import Trainer, TrainerConfig


class CharDataset(Dataset):
    def __init__(self, text, stoi, block_size):
        self.block_size = block_size
        self.data = torch.tensor([stoi[ch] for ch in text], dtype=torch.long)

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx : idx + self.block_size + 1]
        return chunk[:-1], chunk[1:]


def make_corpus(sentences, seed):
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my aunt", "the king", "one bird"]
    verbs = ["sat on", "ran to", "looked at", "sang for", "jumped over"]
    objects = ["the mat", "a tree", "the moon", "her hat", "the river"]
    return " ".join(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}." for _ in range(sentences))


@torch.no_grad()
def estimate_loss(model, dataset, batches=2, batch_size=16):
    model.eval()  # BUG: training-logic left in eval mode: nothing switches the model back to train()
    losses = []
    for b in range(batches):
        items = [dataset[(b * batch_size + i) % len(dataset)] for i in range(batch_size)]
        x = torch.stack([item[0] for item in items])
        y = torch.stack([item[1] for item in items])
        _, loss = model(x, y)
        losses.append(loss.item())
    return sum(losses) / len(losses)


def main():
    parser = argparse.ArgumentParser(description="char-level GPT")
    parser.add_argument("--max-iters", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--eval-interval", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    text = make_corpus(300, seed=1)
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    split = int(0.9 * len(text))
    train_dataset = CharDataset(text[:split], stoi, args.block_size)
    val_dataset = CharDataset(text[split:], stoi, args.block_size)

    model = GPT(len(chars), args.block_size)
    config = TrainerConfig(max_iters=args.max_iters, batch_size=args.batch_size)
    trainer = Trainer(config, model, train_dataset)

    def batch_end_callback(trainer):
        if trainer.iter_num % 10 == 0:
            print(f"iter {trainer.iter_num}: train loss: {trainer.loss.item():.4f}")
        if trainer.iter_num % args.eval_interval == 0:
            val = estimate_loss(model, val_dataset)
            print(f"iter {trainer.iter_num}: validation {val:.4f}")

    trainer.set_callback("on_batch_end", batch_end_callback)
    trainer.run()


if __name__ == "__main__":
    main()
