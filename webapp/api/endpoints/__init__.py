"""The API's routers, one per area: operations, training, review, audit (and ``me``)."""
