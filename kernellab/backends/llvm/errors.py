"""The one error the lowering raises: an op or a form of an op it has no rule for."""


class LoweringError(NotImplementedError):
    pass
