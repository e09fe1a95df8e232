"""``reporter build``: the orchestration of a site build, its MkDocs configuration and the safe publishing of public/."""
