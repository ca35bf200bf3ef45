"""Byte-level tokenizer: every byte of the UTF-8 text is one token (vocabulary
256), written as a flat binary of uint16 token ids (the nanoGPT/Megatron
format, little-endian as the machines we run on) that a program reads with
`--data train.bin --data-dtype uint16`.

    python3 tokenizer.py [--input data/input.txt] [--out train.bin]
"""
import argparse
import array
import os
import sys

VOCAB = 256


def encode(text):
    return list(text.encode("utf-8"))


def decode(ids):
    return bytes(ids).decode("utf-8", errors="replace")


def write_tokens(ids, path):
    data = array.array("H", ids)
    if sys.byteorder != "little":
        data.byteswap()
    with open(path, "wb") as out:
        data.tofile(out)


def read_tokens(path):
    data = array.array("H")
    with open(path, "rb") as f:
        data.frombytes(f.read())
    if sys.byteorder != "little":
        data.byteswap()
    return data.tolist()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=os.path.join(here, "data", "input.txt"))
    parser.add_argument("--out", default="train.bin")
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as f:
        ids = encode(f.read())
    write_tokens(ids, args.out)
    print(f"{args.out}: {len(ids)} tokens (byte-level, vocabulary {VOCAB})")


if __name__ == "__main__":
    main()
