#!/bin/bash
# goldset gen stage6-mxfp4 (public) vs dd writing the same bytes, alternating, 3 runs each;
# wall, user and sys seconds of each run (the VM may be shared: compare CPU seconds too).
# Expects a goldset binary at /tmp/mx/goldset.
cd /tmp/mx
rm -rf bench; mkdir -p bench
for i in 1 2 3; do
  rm -rf bench/g
  /usr/bin/time -f "goldset %e s wall %U user %S sys %M KB" ./goldset gen stage6-mxfp4 --split public --out bench/g --quiet --jobs 2 2>&1 | tail -1
  bytes=$(du -sb bench/g/stage6-mxfp4 | cut -f1)
  rm -rf bench/g
  n=$(( (bytes + 4194303) / 4194304 ))
  /usr/bin/time -f "dd %e s wall %U user %S sys ($bytes bytes, $n x 4 MiB)" dd if=/dev/zero of=bench/dd.bin bs=4M count=$n oflag=direct conv=fdatasync status=none 2>&1 | tail -1
  rm -f bench/dd.bin
done
