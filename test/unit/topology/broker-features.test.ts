import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyError } from '../../../src';
import { planTopology, resolveTopologyOptions } from '../../../src/topology';
import { readBrokerVersion } from '../../../src/connection';
import { requireBrokerFeatures } from '../../../src/topology';

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
    assert.deepEqual(
      readBrokerVersion({ product: 'RabbitMQ', version: '4.3.0', platform: 'Erlang/OTP 27' }),
      {
        product: 'RabbitMQ',
        version: '4.3.0',
        major: 4,
        minor: 3,
      },
    );
    assert.deepEqual(readBrokerVersion({ product: 'SomeMQ', version: 'dev' }), {
      product: 'SomeMQ',
      version: 'dev',
    });
    assert.equal(readBrokerVersion({}), undefined);
    assert.equal(readBrokerVersion(undefined), undefined);
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
