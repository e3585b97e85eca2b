"""A sampling script in the shape of Cerebras' gigaGPT sample.py (github.com/Cerebras/gigaGPT): a checkpoint
read with cstorch.load, GPT-2's tiktoken encoding, prompts read from the terminal until an empty line, tokens
sampled from the top k until the end-of-text token. Written for the real SDK.

    accelkit vendor-run --synthetic-data cstorch_sample.py --checkpoint_path model_dir/checkpoint.mdl
"""
import argparse

import cerebras.pytorch as cstorch
import tiktoken
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint_path", required=True)
parser.add_argument("--temperature", type=float, default=0.8)
parser.add_argument("--top_k", type=int, default=20)
parser.add_argument("--max_length", type=int, default=24)
args = parser.parse_args()


class TinyLM(torch.nn.Module):
    def __init__(self, vocab_size, width):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab_size, width)
        self.lm_head = torch.nn.Linear(width, vocab_size, bias=False)

    def forward(self, input_ids):  # (B, T) -> (B, T, V)
        h = self.wte(input_ids).cumsum(1) / torch.arange(1, input_ids.shape[1] + 1).view(1, -1, 1)
        return self.lm_head(h)

    def generate(self, input_ids, max_length, temperature, top_k, eos_token_id):
        while input_ids.shape[1] < max_length:
            logits = self(input_ids)[:, -1] / temperature
            kth = torch.topk(logits, top_k).values[:, -1:]
            probs = torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
            nxt = torch.multinomial(probs, 1)
            input_ids = torch.cat([input_ids, nxt], dim=1)
            if int(nxt) == eos_token_id:
                break
        return input_ids


state_dict = cstorch.load(args.checkpoint_path)
model = TinyLM(**state_dict["model_config"])
model.load_state_dict(state_dict["model"])
model.eval()

tokenizer = tiktoken.get_encoding("gpt2")
torch.manual_seed(0)
with torch.no_grad():
    while prompt := input("Enter a prompt (RETURN to exit): "):
        input_ids = torch.tensor(tokenizer.encode(prompt)).unsqueeze(0)
        response = model.generate(input_ids, max_length=args.max_length, temperature=args.temperature,
                                  top_k=args.top_k, eos_token_id=tokenizer.eot_token).squeeze().tolist()
        print(f"Prompt tokens: {input_ids.shape[1]}")
        print(f"Response: {tokenizer.decode(response)}")
