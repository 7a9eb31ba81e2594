"""echo "PROMPT" | python -m tasks.gpt.generate RUN [--max_new_tokens=50] [--do_sample --top_k=50]:
per line, the prompt and its continuation (streamed for one prompt); RUN is a run, a checkpoint,
a Hugging Face GPT-2 directory or hub name (the same as `python -m zoo generate gpt`; `--help`
lists the options)."""

from tasks.gpt.spec import GPTSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(GPTSpec(), "generate", argv)


if __name__ == "__main__":
    main()
