"""The runtime's seeded token sampler (runtime/src/TokenData.cpp), ported
exactly, so a single-process PyTorch run trains on the very sequences a
pipelined program draws. Pure Python: no torch needed.

Sequence j of micro-batch mb at step s (steps count from 1) starts at
    SplitMix64(streamSeed(seed, -3, f"sample.{s}.{mb}.{j}")).next() % (len(tokens) - seq)
where `seed` is the batch seed: the program's --seed plus one.
"""

MASK = (1 << 64) - 1


def splitmix64_next(state):
    """One SplitMix64 step: (new state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def stream_seed(seed, stage_index, name):
    """pipert::streamSeed: FNV-1a of the name, mixed with the seed and the stage index."""
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    _, mixed = splitmix64_next((seed ^ ((h * 0x9E3779B97F4A7C15) & MASK)) & MASK)
    s = mixed ^ ((stage_index * 0xD1B54A32D192ED03) & MASK)
    return splitmix64_next(s)[1]


def sequence_start(seed, step, mb, j, num_tokens, seq):
    """Where sequence j of micro-batch mb at `step` starts (TokenData::start)."""
    stream = stream_seed(seed, -3, f"sample.{step}.{mb}.{j}")
    return splitmix64_next(stream)[1] % (num_tokens - seq)


def micro_batch(tokens, seed, step, mb, sequences, seq):
    """Input and target ids of a micro-batch: lists of `sequences` lists of `seq` ids."""
    inputs, targets = [], []
    for j in range(sequences):
        start = sequence_start(seed, step, mb, j, len(tokens), seq)
        inputs.append(list(tokens[start:start + seq]))
        targets.append(list(tokens[start + 1:start + seq + 1]))
    return inputs, targets


if __name__ == "__main__":
    # Prints starts for a fixed case; runtime/tests/LossTest.cpp pins the same numbers.
    print(" ".join(str(sequence_start(8, step, mb, j, 1000, 16))
                   for step in (1, 2) for mb in (0, 3) for j in (0, 1)))
