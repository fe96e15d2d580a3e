"""How the judge's processes talk: frames on pipes and sockets, job messages between the pool,
its workers and the trusted process of each job, requests and answers between the trusted
process and the processes that run user code, and the tensors that cross between them."""
