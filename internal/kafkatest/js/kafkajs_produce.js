'use strict'
// Produces the values read from stdin (one a line) with kafkajs 2.2.4.
//
// Run by kafkatest.KafkajsProduce (internal/kafkatest/kafkajs.go). Its
// config is a JSON object, from argv[2] or else from the first line of stdin:
//   addr, topic, partitions    the broker, the topic, values go to partition i % partitions
//   clientId                   "" or absent: kafkajs's own default ("kafkajs")
//   idempotent                 the producer's idempotent setting
//   requestTimeoutMs           the client's requestTimeout: its own deadline for a response
//   produceTimeoutMs           send()'s timeout: the produce request's TimeoutMillis
//   retries, retryMs           retry.retries and retry.initialRetryTime (= maxRetryTime)
//   maxInFlight                the producer's maxInFlightRequests
//   perSend                    values handed to one send() call, each call awaited
// It prints one line a value acknowledged, "<value> <partition>@<offset>", to
// stdout; kafkajs's log goes to stderr.
const readline = require('node:readline')
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const lines = []
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const l of rl) lines.push(l)
  const cfg = JSON.parse(process.argv[2] ?? lines.shift())
  const values = lines.filter(l => l !== '')

  const retry = { retries: cfg.retries, initialRetryTime: cfg.retryMs, maxRetryTime: cfg.retryMs, factor: 0, multiplier: 1 }
  const kafka = new Kafka({
    clientId: cfg.clientId || undefined,
    brokers: [cfg.addr],
    requestTimeout: cfg.requestTimeoutMs,
    connectionTimeout: 5000,
    retry,
    logLevel: logLevel.WARN,
    logCreator: () => ({ namespace, level, log }) => {
      const { message, ...extra } = log
      process.stderr.write(`kafkajs ${level} ${namespace} ${message} ${JSON.stringify(extra)}\n`)
    }
  })
  const producer = kafka.producer({
    idempotent: !!cfg.idempotent,
    maxInFlightRequests: cfg.maxInFlight,
    allowAutoTopicCreation: false,
    retry
  })
  await producer.connect()
  const parts = Math.max(cfg.partitions || 1, 1)
  const per = Math.max(cfg.perSend || 1, 1)
  for (let i = 0; i < values.length; i += per) {
    const chunk = values.slice(i, i + per).map((v, j) => ({ value: v, partition: (i + j) % parts }))
    const res = await producer.send({ topic: cfg.topic, messages: chunk, acks: -1, timeout: cfg.produceTimeoutMs })
    const next = new Map(res.map(r => [r.partition, BigInt(r.baseOffset)]))
    for (const m of chunk) {
      const off = next.get(m.partition)
      next.set(m.partition, off + 1n)
      process.stdout.write(`${m.value} ${m.partition}@${off}\n`)
    }
  }
  await producer.disconnect()
}

main().catch(err => {
  process.stderr.write(`kafkajs_produce: ${err && err.stack ? err.stack : err}\n`)
  process.exit(1)
})
