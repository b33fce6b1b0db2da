import time, numpy as np
rng = np.random.default_rng(1)
out = np.empty(1 << 20, np.float32)
for dt in (np.float32, np.float64):
    o = np.empty(1 << 20, dt)
    t = time.perf_counter(); n = 0
    while time.perf_counter() - t < 1.0:
        rng.standard_normal(out=o, dtype=dt); n += o.size
    print("numpy standard_normal", np.dtype(dt).name, round(n / (time.perf_counter() - t) / 1e6, 1), "M/s")
o16 = np.empty(1 << 20, np.float16)
t = time.perf_counter(); n = 0
while time.perf_counter() - t < 1.0:
    rng.standard_normal(out=out, dtype=np.float32); out *= np.float32(0.5); o16[:] = out; n += out.size
print("numpy normal f32*scale -> f16", round(n / (time.perf_counter() - t) / 1e6, 1), "M/s")
