#!/bin/bash
# Device-side: the leaderboard, one process per (family, scenario), tarred into $OUT.
R=$PWD
exec > >(tee $OUT/lb-log.txt) 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/wheels/*.whl || exit 1
mkdir -p /tmp/pkg && cp -r edgegym /tmp/pkg/ && cp -r baselines /tmp/pkg/edgegym/baselines \
  && cp -r agents /tmp/pkg/edgegym/agents && cp -r scenarios /tmp/pkg/edgegym/scenario_data || exit 1
export PYTHONPATH=/tmp/site:/tmp/pkg PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
cd /tmp
nproc; date -u
for job in $JOBS; do
  fam=${job%%/*}; scen=${job##*/}
  mkdir -p /tmp/lb/$fam-$scen
  ( timeout 560 python3 -m edgegym.leaderboard --families $fam --scenarios $scen --out /tmp/lb/$fam-$scen --no-progress > /tmp/lb/$fam-$scen/log.txt 2>&1; echo "$job exit $?" ) &
done
wait
date -u
cd /tmp/lb && tar czf $OUT/lb.tgz . && ls -la $OUT
