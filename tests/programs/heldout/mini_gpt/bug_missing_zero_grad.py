"""Mini GPT, bug: the Trainer (trainer_no_zero_grad.py) never clears the gradients, so each backward() adds the new
gradient to the sum of all earlier ones and AdamW follows that ever-growing, stale sum (clipping hides its size).

Symptom (plain run): no error, the loss still falls but more slowly than clean.py's: smoothed training loss 1.5589
against 1.3982 at iter 180, final validation loss 1.4222 against 1.1829, and the gap widens as training goes on
(iter 100 val loss 1.8004 against 1.4591).
"""

import argparse

import torch
from data import CharDataset, CharTokenizer, make_text
from model import GPT, GPTConfig
from trainer_no_zero_grad import Trainer, TrainerConfig


def parse_args():
    parser = argparse.ArgumentParser(description="character-level mini GPT")
    parser.add_argument("--max-iters", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--eval-interval", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1337)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)

    train_text = make_text(num_sentences=1500, seed=args.seed)
    val_text = make_text(num_sentences=300, seed=args.seed + 1)
    tokenizer = CharTokenizer(train_text)
    train_dataset = CharDataset(train_text, tokenizer, args.block_size)
    val_dataset = CharDataset(val_text, tokenizer, args.block_size)
    print(f"vocab size {tokenizer.vocab_size}, {len(train_text)} training and {len(val_text)} validation characters")

    model_config = GPTConfig(vocab_size=tokenizer.vocab_size, block_size=args.block_size, dropout=args.dropout)
    model = GPT(model_config)
    print(f"model with {sum(p.numel() for p in model.parameters())} parameters")

    train_config = TrainerConfig(max_iters=args.max_iters, batch_size=args.batch_size, learning_rate=args.lr)
    trainer = Trainer(train_config, model, train_dataset)

    def on_batch_end(trainer):
        if trainer.iter_num % args.log_interval == 0:
            print(f"iter {trainer.iter_num} loss: {trainer.smooth_loss:.4f} (lr {trainer.lr:.2e})")
        if trainer.iter_num > 0 and trainer.iter_num % args.eval_interval == 0:
            val_loss = trainer.evaluate(val_dataset)
            print(f"iter {trainer.iter_num} val loss: {val_loss:.4f}")
            model.eval()
            context = torch.tensor([tokenizer.encode("the ")], dtype=torch.long)
            sample = model.generate(context, max_new_tokens=40)[0]
            model.train()
            print(f"sample: {tokenizer.decode(sample)!r}")

    trainer.add_callback("on_batch_end", on_batch_end)
    trainer.run()

    val_loss = trainer.evaluate(val_dataset, max_batches=16)
    print(f"final val loss: {val_loss:.4f}")


if __name__ == "__main__":
    main()
