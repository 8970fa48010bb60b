import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyError } from '../../../src';
import { planTopology, resolveTopologyOptions } from '../../../src/topology';
import { describeFeatures, readBrokerVersion } from '../../../src/connection';
import {
  consumerTimeoutArguments,
  MAX_CONSUMER_TIMEOUT_MS,
  requireBrokerFeatures,
} from '../../../src/topology';

const options = resolveTopologyOptions({ namespace: 'app', delay: { levels: 2 } });
const withQuorumPriorities = planTopology({
  topology: { queues: { urgent: { type: 'quorum', maxPriority: 9 }, plain: {} } },
  jobs: [],
  options,
});
const withoutQuorumPriorities = planTopology({
  topology: { queues: { reports: { maxPriority: 9 }, plain: {} } },
  jobs: [],
  options,
});

describe('readBrokerVersion', () => {
  it("reads product and version from amqplib's server properties", () => {
    const broker = readBrokerVersion({ product: 'RabbitMQ', version: '4.3.0', platform: 'Erlang/OTP 27' });
    assert.deepEqual(
      { ...broker, features: undefined },
      { product: 'RabbitMQ', version: '4.3.0', major: 4, minor: 3, features: undefined },
    );
    const other = readBrokerVersion({ product: 'SomeMQ', version: 'dev' });
    assert.deepEqual(
      { ...other, features: undefined },
      { product: 'SomeMQ', version: 'dev', features: undefined },
    );
    assert.equal(readBrokerVersion({}), undefined);
    assert.equal(readBrokerVersion(undefined), undefined);
  });

  it('derives what differs between RabbitMQ versions from the version', () => {
    const features = (version: string) => readBrokerVersion({ product: 'RabbitMQ', version })!.features;
    assert.deepEqual(features('3.10.8'), {
      quorumPriorities: false,
      consumerTimeoutArgument: false,
      classicConsumerTimeout: true,
      consumerTimeoutClosesChannel: true,
      transientQueues: true,
      dropsDeadLetterCycles: true,
      delayedRetry: false,
    });
    assert.equal(features('3.12.0').consumerTimeoutArgument, true);
    assert.deepEqual(features('4.3.6'), {
      quorumPriorities: true,
      consumerTimeoutArgument: true,
      classicConsumerTimeout: false,
      consumerTimeoutClosesChannel: false,
      transientQueues: false,
      dropsDeadLetterCycles: false,
      delayedRetry: true,
    });
    assert.equal(features('4.2.1').classicConsumerTimeout, true);
    assert.equal(features('4.2.1').delayedRetry, false);
    // a broker that is not RabbitMQ, or says no version: as the newest RabbitMQ
    assert.deepEqual(readBrokerVersion({ product: 'SomeMQ', version: '1.0' })!.features, features('4.3.6'));
    assert.equal(
      describeFeatures(features('4.3.6')),
      'quorumPriorities, consumerTimeoutArgument, delayedRetry',
    );
  });
});

describe('consumerTimeoutArguments', () => {
  const rabbit = (version: string) => readBrokerVersion({ product: 'RabbitMQ', version });

  it('asks for the timeout on quorum queues, and on classic ones only before 4.3, which refuses it there', () => {
    assert.deepEqual(consumerTimeoutArguments(90_000, 'quorum', rabbit('4.3.6')), {
      'x-consumer-timeout': 90_000,
    });
    assert.deepEqual(consumerTimeoutArguments(90_000, 'classic', rabbit('4.3.6')), {});
    assert.deepEqual(consumerTimeoutArguments(90_000, 'classic', rabbit('3.10.8')), {
      'x-consumer-timeout': 90_000,
    });
    assert.deepEqual(consumerTimeoutArguments(90_000, 'classic', undefined), {
      'x-consumer-timeout': 90_000,
    });
  });

  it('caps the timeout at 2^31 - 1 ms', () => {
    assert.deepEqual(consumerTimeoutArguments(1e12, 'quorum', rabbit('4.3.6')), {
      'x-consumer-timeout': MAX_CONSUMER_TIMEOUT_MS,
    });
  });
});

describe('requireBrokerFeatures', () => {
  const rabbit = (version: string) => readBrokerVersion({ product: 'RabbitMQ', version });

  it('refuses quorum priorities on RabbitMQ 3.x, naming the queues and the version', () => {
    assert.throws(
      () => requireBrokerFeatures(withQuorumPriorities, rabbit('3.13.7')),
      (error: unknown) =>
        error instanceof TopologyError &&
        /app\.urgent/.test(error.message) &&
        /need RabbitMQ 4\.0 or later; the broker is RabbitMQ 3\.13\.7/.test(error.message),
    );
  });

  it('accepts them on 4.0 and later, and when the version cannot be read', () => {
    requireBrokerFeatures(withQuorumPriorities, rabbit('4.0.0'));
    requireBrokerFeatures(withQuorumPriorities, rabbit('4.3.1'));
    requireBrokerFeatures(withQuorumPriorities, undefined);
    requireBrokerFeatures(withQuorumPriorities, rabbit('unknown'));
  });

  it('asks nothing of a broker when no quorum queue has priorities', () => {
    requireBrokerFeatures(withoutQuorumPriorities, rabbit('3.10.8'));
  });
});
