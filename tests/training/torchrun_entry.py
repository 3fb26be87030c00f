"""`python -m training ARGS` for torchrun, writing rank 0's result to a JSON file the test reads.

Launched by tests/training/test_distributed.py as
`python -m torch.distributed.run --nproc_per_node 2 tests/training/torchrun_entry.py RESULT.json ARGS`;
it calls the same `main` as `python -m training`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from training.__main__ import main
from training.distributed import launched_context, shutdown

if __name__ == "__main__":
    result_path, argv = Path(sys.argv[1]), sys.argv[2:]
    try:
        result = main(argv)
        if launched_context().is_main:
            result_path.write_text(json.dumps(dataclasses.asdict(result), default=str))
    finally:
        shutdown()
