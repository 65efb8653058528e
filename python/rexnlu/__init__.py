"""rexnlu: schema-guided Chinese universal NLU (RexUniNLU) on a C++ engine.

The call people write for the ModelScope pipeline works as is::

    from rexnlu import pipeline
    p = pipeline('rex-uninlu', model='models/rexnlu-demo-zh-small')
    p(input='国务院总理李克强在北京会见了微软公司总裁比尔·盖茨。', schema={'人名': None, '公司': None})
    # {'output': [[{'type': '人名', 'span': '李克强', 'offset': [6, 9]}], ...]}

`Engine` is the lower-level API (extract, extract_batch, info). docs/python.md has the details.
"""

from ._rexnlu import (
    Engine,
    LimitExceededError,
    ModelError,
    __version__,
    build_task,
    default_model_dir,
    task_names,
)
from ._pipeline import TASKS, Pipeline, RexnluWarning, pipeline

__all__ = [
    "Engine",
    "LimitExceededError",
    "ModelError",
    "Pipeline",
    "RexnluWarning",
    "TASKS",
    "__version__",
    "build_task",
    "default_model_dir",
    "pipeline",
    "task_names",
]
