// Produces the values read from stdin (one a line) with @platformatic/kafka 1.x.
//
// Run by kafkatest.PlatformaticProduce (internal/kafkatest/platformatic.go).
// Its config is a JSON object, from argv[2] or else from the first line of
// stdin:
//   addr, topic, partitions    the broker, the topic, values go to partition i % partitions
//   clientId                   the client ID (platformatic requires one)
//   idempotent                 the producer's idempotent option
//   timeoutMs                  the client's timeout: the produce request's TimeoutMillis
//   requestTimeoutMs           the connection's requestTimeout: its own deadline for a response
//   retries, retryMs           retries and retryDelay
//   maxInflights               maxInflights
//   perSend                    values handed to one send() call, each call awaited
// send() ignores the constructor's acks (it defaults to 1, leader only):
// acks=-1 is passed on every send. It prints one line a value acknowledged,
// "<value> <partition>@<offset>", to stdout; errors go to stderr.
import readline from 'node:readline'
import { Producer, stringSerializers } from '@platformatic/kafka'

const lines = []
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
for await (const l of rl) lines.push(l)
const cfg = JSON.parse(process.argv[2] ?? lines.shift())
const values = lines.filter(l => l !== '')

const opts = {
  clientId: cfg.clientId,
  bootstrapBrokers: [cfg.addr],
  serializers: stringSerializers,
  timeout: cfg.timeoutMs,
  connectTimeout: 5000,
  retries: cfg.retries,
  retryDelay: cfg.retryMs,
  maxInflights: cfg.maxInflights,
  autocreateTopics: false
}
if (cfg.requestTimeoutMs) opts.requestTimeout = cfg.requestTimeoutMs
if (cfg.idempotent) opts.idempotent = true
const producer = new Producer(opts)
try {
  const parts = Math.max(cfg.partitions || 1, 1)
  const per = Math.max(cfg.perSend || 1, 1)
  for (let i = 0; i < values.length; i += per) {
    const chunk = values.slice(i, i + per).map((v, j) => ({ topic: cfg.topic, value: v, partition: (i + j) % parts }))
    const res = await producer.send({ messages: chunk, acks: -1 })
    const next = new Map((res.offsets ?? []).map(r => [r.partition, BigInt(r.offset)]))
    for (const m of chunk) {
      const off = next.get(m.partition)
      next.set(m.partition, off + 1n)
      process.stdout.write(`${m.value} ${m.partition}@${off}\n`)
    }
  }
  await producer.close()
} catch (err) {
  process.stderr.write(`platformatic_produce: ${err && err.stack ? err.stack : err}\n`)
  if (err && err.errors) process.stderr.write(`errors: ${JSON.stringify(err.errors.map(e => e.message))}\n`)
  process.exit(1)
}
