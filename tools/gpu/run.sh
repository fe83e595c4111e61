#!/bin/bash
# Device-side driver of the GPU checks (docs/real-gpu.md). Run from the repo root.
R=$PWD  # the repository root; wheels in .gpu/wheels (see docs/real-gpu.md)
exec > >(tee $OUT/log.txt) 2>&1
date -u; nvidia-smi; nvidia-smi -q > $OUT/nvidia-smi-q.txt 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/wheels/*.whl || exit 1
mkdir -p /tmp/pkg && cp -r edgegym /tmp/pkg/ && cp -r baselines /tmp/pkg/edgegym/baselines \
  && cp -r agents /tmp/pkg/edgegym/agents && cp -r scenarios /tmp/pkg/edgegym/scenario_data || exit 1
export PYTHONPATH=/tmp/site:/tmp/pkg PYTHONUNBUFFERED=1
cd /tmp
python3 -c "import edgegym, gymnasium, pydantic, torch, sklearn, pynvml; print('imports ok', edgegym.__file__, torch.__version__, torch.cuda.is_available())" || exit 1
# The default took about 5 minutes on an H200 (2026-11-28; the timeouts are ceilings); add checks, mps, latency or
# profile2, shares or fenergyh by name (STEPS="checks mps" bash tools/gpu/run.sh).
STEPS=${STEPS:-fcont fcont20 fenergy fdag pmps penergy pdag fmig}
for s in $STEPS; do
  echo "##### step $s $(date -u +%T)"; t0=$(date +%s)
  case $s in
    latency) timeout 60 python3 $R/.gpu/latency_check.py ;;
    shares)  # the share-efficiency curve in sevenths, one process alone under one MPS daemon
      for m in resnet50 vit_b16; do timeout 150 python3 $R/tools/gpu/mps_regime.py --model $m --plan shares; done ;;
    fenergyh)  # the energy fidelity on the scenario penergy wrote of this GPU (run penergy first)
      timeout 150 python3 -m edgegym fidelity edgegym/EnergyFairShare-v0 --device cuda --scenario $OUT/profile-energy.yaml --json $OUT/fidelity-energy-this-gpu.json ;;
    profile2) timeout 100 python3 -m edgegym profile --device cuda --out $OUT/h100-2.yaml ;;
    checks) timeout 200 python3 $R/.gpu/gpu_checks.py ;;
    profile) timeout 200 python3 -m edgegym profile --device cuda --out $OUT/h100.yaml ;;
    fcont) timeout 100 python3 -m edgegym fidelity edgegym/ContinualLearning-v0 --device cuda --json $OUT/fidelity-continual.json ;;
    fcont20) timeout 100 python3 -m edgegym fidelity edgegym/ContinualLearning-v0 --device cuda --time-scale 20 --json $OUT/fidelity-continual-paced.json ;;
    fmig) timeout 120 python3 -m edgegym fidelity edgegym/MIGReconfig-v0 --device cuda --json $OUT/fidelity-mig.json ;;
    # Clocks stay as they are on a lent machine: allow_clock_changes is never passed here.
    fenergy) timeout 240 python3 -m edgegym fidelity edgegym/EnergyFairShare-v0 --device cuda --json $OUT/fidelity-energy.json ;;
    fdag) timeout 60 python3 -m edgegym fidelity edgegym/DAGOffload-v0 --device cuda --json $OUT/fidelity-dag.json ;;
    pmig) timeout 60 python3 -m edgegym profile --family mig --device cuda --repeats 10 --beside-retraining 5 --out $OUT/profile-mig.yaml ;;
    pmps)  # the MIG family's profile with inference beside retraining under one MPS daemon
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
      mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
      if which nvidia-cuda-mps-control && timeout 20 nvidia-cuda-mps-control -d; then
        sleep 1
        timeout 90 python3 -m edgegym profile --family mig --device cuda --repeats 10 --beside-retraining 5 --out $OUT/profile-mig-mps.yaml
        echo quit | timeout 20 nvidia-cuda-mps-control; sleep 1
      else echo "MPS daemon not started"; fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
    penergy) timeout 50 python3 -m edgegym profile --family energy --device cuda --repeats 10 --out $OUT/profile-energy.yaml ;;
    pdag) timeout 30 python3 -m edgegym profile --family dag --device cuda --repeats 10 --out $OUT/profile-dag.yaml ;;
    mps)
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
      mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
      python3 $R/.gpu/mps_check.py
      if which nvidia-cuda-mps-control && timeout 20 nvidia-cuda-mps-control -d; then
        sleep 1; ls -la $CUDA_MPS_PIPE_DIRECTORY
        timeout 90 python3 $R/.gpu/mps_check.py --env
        echo quit | timeout 20 nvidia-cuda-mps-control; sleep 1
        cat $CUDA_MPS_LOG_DIRECTORY/*.log | tail -20
      else echo "MPS daemon not started"; fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
  esac
  echo "##### step $s rc=$? $(( $(date +%s) - t0 ))s"
done
