"""TSR's distillation strategies, chosen by config: which teacher a batch is distilled against
(:mod:`.teacher`, ``method.reference``), when the term trains (:mod:`.timing`,
``method.kd_timing``) and its shape (:mod:`.shape`, ``method.kd_reshape``)."""
