#!/usr/bin/env python3
"""Writes the feeds of examples/train_step.xg without numpy: a global batch
of 64 rows (train_batch/x.npy f32[64,16], y.npy f32[64,4], a smooth target)
and the initial weights (train_init/w1 b1 w2 b2). Deterministic."""
import math, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))

def save(path, shape, vals):
    dims = ''.join('%d,' % d for d in shape) if len(shape) != 1 else '%d,' % shape[0]
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    hdr += ' ' * (63 - (10 + len(hdr)) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode())
        f.write(struct.pack('<%df' % len(vals), *vals))

def lcg(seed):
    s = seed
    while True:
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        yield ((s >> 33) / float(1 << 31)) * 2.0 - 1.0  # [-1, 1)

def main():
    r = lcg(7)
    B, I, H, O = 64, 16, 32, 4
    x = [next(r) for _ in range(B * I)]
    y = []
    for i in range(B):
        row = x[i * I:(i + 1) * I]
        for o in range(O):
            y.append(math.sin(sum(row[o::O])) * 0.5 + 0.1 * o)
    os.makedirs(os.path.join(HERE, 'train_batch'), exist_ok=True)
    os.makedirs(os.path.join(HERE, 'train_init'), exist_ok=True)
    save(os.path.join(HERE, 'train_batch', 'x.npy'), (B, I), x)
    save(os.path.join(HERE, 'train_batch', 'y.npy'), (B, O), y)
    save(os.path.join(HERE, 'train_init', 'w1.npy'), (I, H), [next(r) * 0.25 for _ in range(I * H)])
    save(os.path.join(HERE, 'train_init', 'b1.npy'), (H,), [0.0] * H)
    save(os.path.join(HERE, 'train_init', 'w2.npy'), (H, O), [next(r) * 0.18 for _ in range(H * O)])
    save(os.path.join(HERE, 'train_init', 'b2.npy'), (O,), [0.0] * O)

if __name__ == '__main__':
    main()
