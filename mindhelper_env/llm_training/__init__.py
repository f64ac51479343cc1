"""Training language-model helpers on MindHelper (docs/llm-training.md).

* :mod:`.dataset` — Trigger decisions as a chat dataset (``mindhelper export-trigger-data``;
  needs ``datasets``);
* :mod:`.sft` — fine-tuning a language-model Trigger with TRL's ``SFTTrainer``
  (``mindhelper train-trigger --algo sft``; the ``sft`` extra), and its operation accuracy;
* :mod:`.trl` — an ``environment_factory`` class for TRL's ``GRPOTrainer`` (the ``trl``
  extra);
* :mod:`.vf_env` — ``load_environment(...)``, a verifiers multi-turn environment whose
  rubric reports PIR's, PSR's and PHR's events and harm as separate reward components (the
  ``verifiers`` extra);
* :mod:`.cli` — the ``export-trigger-data`` command and ``train-trigger --algo sft``.

Importing this package imports none of torch, transformers, datasets, trl, peft or
verifiers; each module imports what it needs when called.
"""

__all__: list[str] = []
