// Connection tests are added below once the fake coordinator exists.
