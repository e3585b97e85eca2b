"""A SambaFlow app in the shape of SambaNova's generative_nlp tutorial (github.com/sambanova/tutorials,
generative_nlp/generative_train.py and configuration/gpt2_patch.py): a Hugging Face GPT-2 built from its config,
patched for the RDU (a forward that returns the per-token loss and the logits, Conv1D as samba.addmm on transposed
weights, op_fusion directives, samba_logger with log_limit), traced with None placeholders among its inputs and
int32 / int16 input ids, positions and labels, three samba.optim.AdamW optimizers over OrderedSets of parameters
with max_grad_norm, the loss output's gradient set by the app (traced_outputs[0].sn_grad = the per-token loss
scale), session.run with section_types ["FWD", "BCKWD", "GRADNORM", "OPT"] and a hyperparam_dict, then an
evaluation that runs ["FWD"] with lr and dropout 0. Written for the real SDK; nothing here names accelkit.
The tutorial reads pre-tokenized HDF5 files; this app makes its prompt / completion pairs itself (counting
sequences: the completion continues the prompt), with the same input_ids / token_type_ids layout.

    python samba_generative.py compile -b 8 --config_name gpt2 --max_seq_length 16
    python samba_generative.py run -b 8 --config_name gpt2 --max_seq_length 16 -p out/hf_transformer/hf_transformer.pef
"""
import argparse
import itertools
import sys
from enum import Enum

import sambaflow.samba.utils as utils
import torch
import torch.nn as nn
import transformers
from sambaflow import samba
from sambaflow.logging import samba_logger
from sambaflow.samba.directives import op_fusion
from sambaflow.samba.utils.argparser import parse_app_args
from sambaflow.sambacollections import OrderedSet
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler
from transformers import AutoConfig, AutoModelForCausalLM


class TokenID(Enum):
    PROMPT_TOKEN_TYPE_ID = 0
    COMPLETION_TOKEN_TYPE_ID = 1
    PADDING_TOKEN_TYPE_ID = 2


def add_common_args(parser: argparse.ArgumentParser):
    parser.add_argument("--config_name", type=str, help="model config name or path (e.g. gpt2)")
    parser.add_argument("--max_seq_length", type=int, default=16, help="tokens per sample")
    parser.add_argument("--weight_decay", type=float, default=0.1, help="AdamW weight decay")
    parser.add_argument("--max_grad_norm_clip", type=float, default=1.0, help="maximum gradient norm")
    parser.add_argument("--learning_rate", type=float, default=3e-3, help="AdamW learning rate")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout probability")
    parser.add_argument("--prompt_loss_weight", type=float, default=0.0, help="weight of prompt tokens in the loss")


def add_run_args(parser: argparse.ArgumentParser):
    parser.add_argument("--steps", type=int, default=60, help="training steps")
    parser.add_argument("--checkpoint_name", type=str, default="checkpoint.pt", help="where to save the weights")


# ---- configuration/gpt2_patch.py, condensed -----------------------------------------------------------
def gpt2_patch_helper(model: nn.Module) -> nn.Module:
    model.forward = gpt2_head_forward.__get__(model)
    for layer in model.transformer.h:
        layer.mlp.act = nn.GELU()
        size = (1, 1, layer.attn.bias.shape[-1], layer.attn.bias.shape[-2])  # transformers 4's causal-mask buffer
        layer.attn.bias = layer.attn.bias.expand(size)
        for conv in (layer.attn.c_attn, layer.attn.c_proj, layer.mlp.c_fc, layer.mlp.c_proj):
            conv.weight = transpose_weight(conv.weight)
            conv.forward = gpt2_conv1d_forward.__get__(conv, transformers.modeling_utils.Conv1D)
        op_fusion(layer, "Encoder")
    return model


def gpt2_head_forward(self, input_ids=None, past_key_values=None, attention_mask=None, token_type_ids=None,
                      position_ids=None, head_mask=None, inputs_embeds=None, encoder_hidden_states=None,
                      encoder_attention_mask=None, labels=None):
    samba_logger.warning("Warning: Patched GPT2LMhead function used", log_limit=1)
    hidden_states = self.transformer(input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                     use_cache=False)[0]
    lm_logits = self.lm_head(hidden_states)
    if labels is None:
        return (lm_logits,)
    loss_fct = nn.CrossEntropyLoss(reduction="none")
    loss = loss_fct(lm_logits.view(-1, lm_logits.size(-1)), labels.view(-1))
    return loss, lm_logits * 1


def gpt2_conv1d_forward(self, x: torch.Tensor) -> torch.Tensor:
    samba_logger.warning("Warning: Patched gpt2_conv1d_forward function called instead of conv1d.forward",
                         log_limit=1)
    return samba.addmm(self.bias, x, self.weight, is_transposed=True)


def transpose_weight(tensor: torch.Tensor) -> nn.Parameter:
    return nn.Parameter(data=tensor.detach().transpose(1, 0).contiguous(), requires_grad=tensor.requires_grad)


# ---- data: prompt / completion pairs with the tutorial's layout ---------------------------------------
def make_dataset(n: int, seq_len: int, seed: int) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(3, 60, (n, 1), generator=g)
    input_ids = start + torch.arange(seq_len)  # counting: each token is the previous one plus one
    token_type_ids = torch.full((n, seq_len), TokenID.COMPLETION_TOKEN_TYPE_ID.value)
    token_type_ids[:, : seq_len // 2] = TokenID.PROMPT_TOKEN_TYPE_ID.value
    return torch.utils.data.TensorDataset(input_ids, token_type_ids)


def get_model_trace_inputs(args: argparse.Namespace):
    input_ids = torch.randint(0, 100, (args.batch_size, args.max_seq_length), dtype=torch.int32)
    input_ids = samba.from_torch_tensor(input_ids, name="input_ids")
    position_ids = torch.arange(args.max_seq_length).short()
    position_ids = samba.from_torch_tensor(position_ids.unsqueeze(0).expand(input_ids.shape), name="input_position_ids")
    labels = torch.ones(args.batch_size, args.max_seq_length, dtype=torch.int16)
    labels = samba.from_torch_tensor(labels, name="labels")
    return (input_ids, None, None, None, position_ids, None, None, None, None, labels)


def get_runtime_inputs(torch_input):
    input_ids, position_ids, labels = torch_input
    return [samba.from_torch_tensor(input_ids.int(), name="input_ids"),
            samba.from_torch_tensor(position_ids, name="input_position_ids"),
            samba.from_torch_tensor(labels, name="labels")]


def prepare_inputs(args: argparse.Namespace, inputs):
    input_ids = inputs[0].int()
    position_ids = torch.arange(args.max_seq_length).unsqueeze(0).expand(input_ids.shape).short()
    labels = input_ids.short()[..., 1:]
    labels = torch.cat((labels, torch.ones([labels.shape[0], 1], dtype=labels.dtype) * -100), dim=1)
    target_token_type_ids = inputs[1].int()[..., 1:]
    target_token_type_ids = torch.cat((target_token_type_ids, torch.ones([target_token_type_ids.shape[0], 1],
                                       dtype=target_token_type_ids.dtype) * TokenID.PADDING_TOKEN_TYPE_ID.value), dim=1)
    return (input_ids, None, None, None, position_ids, None, None, None, None, labels), target_token_type_ids


def compute_loss_scale(args, targets, target_token_type_ids, output_dtype):
    grad_scale_not_ignored = ~targets.eq(-100)
    grad_scale_not_ignored[target_token_type_ids.eq(TokenID.PADDING_TOKEN_TYPE_ID.value)] = False
    grad_scale = grad_scale_not_ignored.float()
    grad_scale[target_token_type_ids.eq(TokenID.PROMPT_TOKEN_TYPE_ID.value)] *= args.prompt_loss_weight
    grad_scale /= torch.sum(grad_scale)
    return grad_scale.bfloat16().to(output_dtype).flatten()


def model_step(args, model, inputs, target_token_type_ids, traced_outputs):
    inputs = [ipt for ipt in inputs if ipt is not None]
    hyperparam_dict = {"lr": args.learning_rate, "p": args.dropout}
    loss_scale = compute_loss_scale(args, inputs[-1], target_token_type_ids, model.output_tensors[0].dtype)
    inputs_this_step = get_runtime_inputs(inputs)
    traced_outputs[0].sn_grad = loss_scale  # the gradient the backward pass starts from
    outputs = samba.session.run(inputs_this_step, traced_outputs, hyperparam_dict=hyperparam_dict,
                                section_types=["FWD", "BCKWD", "GRADNORM", "OPT"])
    loss = samba.to_torch(outputs[0]).float()
    loss *= loss_scale.float()
    return loss.sum()


def evaluate(args, model, traced_outputs):
    losses, matches, total = [], 0, 0
    loader = DataLoader(eval_data, sampler=SequentialSampler(eval_data), batch_size=args.batch_size, drop_last=True)
    for batch in loader:
        inputs, target_token_type_ids = prepare_inputs(args, batch)
        inputs = [t for t in inputs if t is not None]
        inputs_this_step = get_runtime_inputs(inputs)
        outputs = samba.session.run(inputs_this_step, traced_outputs, hyperparam_dict={"lr": 0.0, "p": 0.0},
                                    section_types=["FWD"])
        logits = samba.to_torch(outputs[1])
        for sample in range(args.batch_size):
            idx = target_token_type_ids[sample] == TokenID.COMPLETION_TOKEN_TYPE_ID.value
            preds = torch.argmax(logits[sample], axis=-1)
            matches += int(torch.equal(samba.to_torch(inputs_this_step[-1][sample][idx]).short(), preds[idx].short()))
            total += 1
        loss_scale = compute_loss_scale(args, inputs[-1], target_token_type_ids, model.output_tensors[0].dtype)
        losses.append((samba.to_torch(outputs[0]).float() * loss_scale.float()).sum().item())
    return sum(losses) / len(losses), matches / total


def get_optimizers(args, model):
    emb_modules = [module for module in model.modules() if isinstance(module, torch.nn.Embedding)]
    emb_params = OrderedSet(itertools.chain(*[emb.parameters() for emb in emb_modules]))
    other_params = OrderedSet([(name, param) for name, param in model.named_parameters() if param not in emb_params])
    no_decay = ["bias"] + [name for name, _ in model.named_parameters() if "ln" in name]
    params_w_weight_decay = OrderedSet([(n, p) for n, p in other_params if not any(nd in n for nd in no_decay)])
    params_wo_weight_decay = OrderedSet([(n, p) for n, p in other_params if any(nd in n for nd in no_decay)])
    emb_optim = samba.optim.AdamW(emb_params, lr=args.learning_rate, betas=(0.9, 0.997), eps=1e-8,
                                  weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm_clip)
    opt_w_weight_decay = samba.optim.AdamW([p for (_, p) in params_w_weight_decay], lr=args.learning_rate,
                                           betas=(0.9, 0.997), weight_decay=args.weight_decay,
                                           max_grad_norm=args.max_grad_norm_clip)
    opt_wo_weight_decay = samba.optim.AdamW([p for (_, p) in params_wo_weight_decay], lr=args.learning_rate,
                                            betas=(0.9, 0.997), weight_decay=0, max_grad_norm=args.max_grad_norm_clip)
    return [emb_optim, opt_w_weight_decay, opt_wo_weight_decay]


def train(args, model, traced_outputs):
    train_data = make_dataset(512, args.max_seq_length, seed=1)
    losses, steps = [], 0
    while steps < args.steps:
        loader = DataLoader(train_data, sampler=RandomSampler(train_data), batch_size=args.batch_size, drop_last=True)
        for batch in loader:
            if steps >= args.steps:
                break
            inputs, target_token_type_ids = prepare_inputs(args, batch)
            inputs = [t for t in inputs if t is not None]
            losses.append(model_step(args, model, inputs, target_token_type_ids, traced_outputs).item())
            steps += 1
    print(f"Finished training at {steps} steps!")
    print(f"first loss {sum(losses[:5]) / 5:.4f} last loss {sum(losses[-5:]) / 5:.4f}")
    eval_loss, eval_acc = evaluate(args, model, traced_outputs)
    print(f"Final eval total loss: {eval_loss:.4f}\nFinal eval accuracy: {eval_acc:.3f}")
    torch.save(model.state_dict(), args.checkpoint_name)


eval_data = None


def main(argv):
    global eval_data
    args = parse_app_args(argv=argv, common_parser_fn=add_common_args, run_parser_fn=add_run_args)
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(args.config_name)
    config.use_cache = False
    args.dropout = config.resid_pdrop
    model = AutoModelForCausalLM.from_config(config)
    model = model.eval() if args.inference else model.train()
    model = gpt2_patch_helper(model)
    samba.from_torch_model_(model)
    inputs = get_model_trace_inputs(args)
    optims = get_optimizers(args, model)
    eval_data = make_dataset(64, args.max_seq_length, seed=2)
    if args.command == "compile":
        samba.session.compile(model, inputs, optims, name="hf_transformer", init_output_grads=True)
    elif args.command == "run":
        traced_outputs = utils.trace_graph(model, inputs, optims, pef=args.pef, init_output_grads=True)
        train(args, model, traced_outputs)


if __name__ == "__main__":
    main(sys.argv[1:])
