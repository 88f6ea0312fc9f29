"""Continual-learning maths shared by methods and analysis: losses, routing, signatures,
teacher logits, the task memory, the rehearsal buffer, Fisher penalties and projections."""
