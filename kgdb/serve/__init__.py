"""The knowledge service (``kgdb serve``): kgdb over HTTP for BI tools, agent hosts, Dify and
the database's own procedures. FastAPI and uvicorn come with the ``serve`` extra."""
