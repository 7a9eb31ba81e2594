"""bench.autotune_choices reads inductor's AUTOTUNE tables: the winner, and cuBLAS's row when printed."""

from bench.autotune_choices import choices, markdown

LOG = """\
E1126 16:57:50 select_algorithm.py:3924] Ignoring this choice.
AUTOTUNE mm(256x768, 768x768)
strides: [768, 1], [768, 1]
dtypes: torch.bfloat16, torch.bfloat16
  triton_mm_1128 0.0059 ms 100.0% ACC_TYPE='tl.float32', BLOCK_K=128, num_warps=4
  mm 0.0066 ms 89.8%
SingleProcess AUTOTUNE benchmarking takes 13.5817 seconds and 0.0002 seconds precompiling for 21 choices
AUTOTUNE addmm(256x10, 256x768, 768x10)
strides: [0, 1], [768, 1], [1, 768]
dtypes: torch.bfloat16, torch.bfloat16, torch.bfloat16
  triton_mm_996 0.0088 ms 100.0% ACC_TYPE='tl.float32', BLOCK_K=32
  triton_mm_990 0.0090 ms 97.8% ACC_TYPE='tl.float32', BLOCK_K=64
"""


def test_each_table_gives_its_winner_and_the_cublas_row_when_printed():
    records = choices(LOG)
    assert [r["shape"] for r in records] == ["mm(256x768, 768x768)", "addmm(256x10, 256x768, 768x10)"]
    assert records[0]["best"] == ("triton_mm_1128", 0.0059)
    assert records[0]["aten"] == ("mm", 0.0066)
    assert records[1]["aten"] is None
    table = markdown(records)
    assert "| 0.0066 | 1.12x |" in table
    assert "not in the printed rows" in table
