# Which attention kernel does a compiled SDPA call take under each sdpa_kernel choice?
import torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code
from torch.nn.attention import SDPBackend, sdpa_kernel

q = torch.randn(800, 8, 31, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
for b in [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]:
    torch._dynamo.reset()
    f = torch.compile(lambda q: F.scaled_dot_product_attention(q, q, q).sum())
    with sdpa_kernel([b]):
        _, code = run_and_get_code(f, q)
    ops = sorted({w for w in ("cudnn", "flash", "efficient", "bmm", "extern_kernels.mm") if w in code[0]})
    print(b, ops, flush=True)
