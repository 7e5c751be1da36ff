"""A tiny GPT-2 trained with the Hugging Face ``transformers.Trainer``, the way its language-modelling examples do:
``TrainingArguments``, a ``Dataset`` of token ids with ``labels``, ``Trainer(model, args, train, eval).train()``.

The model is built from a config in code and the data is made here (counting sequences mod 100, learnable), so
nothing is downloaded. The Trainer computes the loss inside the model, backpropagates it through
``accelerator.backward``, clips the gradients to norm 1 and evaluates each epoch. ``--lr 5e3`` blows the logits up:
the cross-entropy over 100 tokens sits at 1e8–1e9 while a uniform guess scores ln(100) = 4.6; ``--lr 2e-3`` learns.
"""

import argparse
import tempfile

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

VOCAB = 100


class CountingSequences(Dataset):
    """Sequences ``start, start + stride, ...`` mod VOCAB: next-token prediction a small model learns quickly."""

    def __init__(self, count: int, length: int, seed: int, held_out_from=None):
        generator = torch.Generator().manual_seed(seed)
        starts = torch.randint(0, VOCAB, (count, 1), generator=generator)
        strides = torch.randint(1, 4, (count, 1), generator=generator)
        positions = torch.arange(length).expand(count, length)
        self.tokens = (starts.expand(count, length) + strides.expand(count, length) * positions) % VOCAB
        if held_out_from is not None:  # only 300 distinct sequences exist: keep the evaluation's out of training
            seen = (self.tokens[:, None, :] == held_out_from.tokens[None, :, :]).all(-1).any(-1)
            self.tokens = self.tokens[~seen]

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, index):
        ids = self.tokens[index]
        return {"input_ids": ids, "labels": ids}


def main():
    parser = argparse.ArgumentParser(description="tiny GPT-2 under transformers.Trainer")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(config)
    train_dataset = CountingSequences(96, 32, seed=1)
    with tempfile.TemporaryDirectory() as output_dir:
        training_args = TrainingArguments(
            output_dir=output_dir,
            learning_rate=args.lr,
            num_train_epochs=args.epochs,
            per_device_train_batch_size=16,
            per_device_eval_batch_size=32,
            eval_strategy="epoch",
            logging_strategy="epoch",
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            disable_tqdm=True,
            seed=0,
        )
        trainer = Trainer(
            model=model,
            args=training_args,
            train_dataset=train_dataset,
            eval_dataset=CountingSequences(32, 32, seed=2, held_out_from=train_dataset),
        )
        trainer.train()  # @train


if __name__ == "__main__":
    main()
