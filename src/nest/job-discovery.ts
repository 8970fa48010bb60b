import { Injectable, Scope } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  ConfigurationError,
  readJobDefinition,
  readJobMetadata,
  type JobClass,
  type JobContext,
  type JobHandler,
  type TopologyDeclaration,
} from '../index';
import { WarrenFeature } from './warren-feature';

type ProviderWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/** One @Job class found among the app's providers. */
interface DiscoveredJob {
  readonly jobClass: JobClass;
  readonly jobName: string;
  readonly moduleName: string;
  /** The Nest-built instance, bound in onModuleInit; known from the start for a value provider. */
  instance: JobHandler | undefined;
  /** Provided with useValue (or overrideProvider().useValue in a test): runs as given. */
  readonly isValue: boolean;
}

/** What the module hands to createWarren. */
export interface DiscoveredApp {
  /** A stand-in per class provider (see `standIn`), the instance itself per value provider. */
  readonly handlers: readonly object[];
  readonly topologies: readonly TopologyDeclaration[];
  readonly jobs: readonly JobClass[];
}

/**
 * Finds what the app declares for warren, wherever it lives: providers decorated with `@Job` and
 * `WarrenModule.forFeature` contributions. `@Cron` needs nothing here: it sits on @Job classes and
 * createWarren reads it from the handlers, stand-ins included (they carry the class). A decorator on
 * other providers would be read next to `readJobMetadata` in `discover` and bound the same way in `bind`.
 *
 * Two steps, because createWarren must know every job before the app's providers exist: publishing
 * needs the plan from the first request on, and the Warren provider is built while Nest is still
 * instantiating the handlers. `discover` reads classes (metatypes) and gives createWarren a stand-in per
 * handler; `bind` (onModuleInit, when every provider is built) points each stand-in at its instance.
 */
@Injectable()
export class JobDiscovery {
  /** By class; a job of `defineJob` (a plain object, no class) by itself. */
  private readonly found = new Map<object, DiscoveredJob>();

  constructor(private readonly discovery: DiscoveryService) {}

  discover(): DiscoveredApp {
    const topologies: TopologyDeclaration[] = [];
    const jobs: JobClass[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.instance instanceof WarrenFeature) {
        const { topology, jobs: featureJobs } = wrapper.instance.options;
        if (topology) topologies.push(topology);
        jobs.push(...(featureJobs ?? []));
        continue;
      }
      const value = valueHandlerOf(wrapper);
      const jobClass = value ? (value.constructor as JobClass) : jobClassOf(wrapper);
      if (jobClass === undefined) continue;
      const { name } = readJobDefinition(value ?? jobClass);
      const moduleName = wrapper.host?.name ?? 'unknown module';
      const defined = value !== undefined && isDefinedJob(value);
      const label = defined ? `defineJob('${name}')` : `@Job('${name}') handler ${jobClass.name}`;
      if (wrapper.scope === Scope.REQUEST || wrapper.scope === Scope.TRANSIENT) {
        throw new ConfigurationError(
          `${label} in ${moduleName} is ${wrapper.scope === Scope.REQUEST ? 'request' : 'transient'}-scoped; ` +
            'job handlers must be singletons (the default scope): jobs do not run inside an HTTP request',
        );
      }
      const key = defined ? value : jobClass;
      const earlier = this.found.get(key);
      if (earlier) {
        throw new ConfigurationError(
          `${label} is provided by two modules (${earlier.moduleName} and ${moduleName}); ` +
            'provide it in one module and import that module where you need it',
        );
      }
      this.found.set(key, {
        jobClass,
        jobName: name,
        moduleName,
        instance: value,
        isValue: value !== undefined,
      });
    }
    const handlers = [...this.found.values()].map((job) => (job.isValue ? job.instance! : standIn(job)));
    return { handlers, topologies, jobs: jobs.filter((job) => !this.found.has(job)) };
  }

  /** Binds every stand-in to the instance Nest built, and rejects handlers warren cannot run. */
  bind(): void {
    const bound = new Set<object>(
      [...this.found.values()].filter((job) => job.isValue).map((job) => job.instance!),
    );
    for (const wrapper of this.discovery.getProviders()) {
      const jobClass = jobClassOf(wrapper);
      const job = jobClass && this.found.get(jobClass);
      if (!job || job.isValue) continue;
      if (!wrapper.isDependencyTreeStatic()) {
        throw new ConfigurationError(
          `@Job('${job.jobName}') handler ${job.jobClass.name} in ${job.moduleName} depends on a request-scoped provider, which makes it request-scoped too; ` +
            'job handlers must be singletons: inject only singleton providers (use ModuleRef.resolve inside handle() for per-job instances)',
        );
      }
      const instance = wrapper.instance as JobHandler | undefined;
      if (!instance)
        throw new ConfigurationError(
          `@Job('${job.jobName}') handler ${job.jobClass.name} in ${job.moduleName} was not instantiated by Nest`,
        );
      job.instance = instance;
      bound.add(instance);
    }
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as object | null | undefined;
      if (
        !wrapper.isFactory ||
        !instance ||
        typeof instance !== 'object' ||
        bound.has(instance) ||
        !readJobMetadata(instance)
      )
        continue;
      const { name } = readJobDefinition(instance);
      if (isDefinedJob(instance))
        throw new ConfigurationError(
          `defineJob('${name}') is provided by a factory (${String(wrapper.name)} in ${wrapper.host?.name ?? 'unknown module'}); ` +
            'provide it with useValue',
        );
      throw new ConfigurationError(
        `@Job('${name}') handler ${instance.constructor.name} is provided by a factory (${String(wrapper.name)} in ${wrapper.host?.name ?? 'unknown module'}); ` +
          'warren discovers handlers among class providers: list the class in providers and let Nest inject its dependencies',
      );
    }
  }
}

/** A job of `defineJob`: a plain object carrying its own job metadata, with no class of its own. */
function isDefinedJob(value: object): boolean {
  return Object.getPrototypeOf(value) === Object.prototype && readJobMetadata(value) !== undefined;
}

/** The @Job class a provider is built from, when Nest builds it from a class (not a factory or value). */
function jobClassOf(wrapper: ProviderWrapper): JobClass | undefined {
  const metatype = wrapper.metatype;
  if (typeof metatype !== 'function' || wrapper.isFactory || wrapper.isAlias) return undefined;
  return readJobMetadata(metatype) ? (metatype as JobClass) : undefined;
}

/**
 * The @Job instance (or the job of `defineJob`) a value provider holds (`useValue`, or
 * `overrideProvider(X).useValue(fake)` in a test).
 */
function valueHandlerOf(wrapper: ProviderWrapper): JobHandler | undefined {
  // A class provider's wrapper holds a bare prototype until Nest builds it: only metatype-less wrappers hold
  // values.
  if (wrapper.metatype !== null && wrapper.metatype !== undefined) return undefined;
  const instance = wrapper.instance as unknown;
  return instance !== null && typeof instance === 'object' && readJobMetadata(instance)
    ? (instance as JobHandler)
    : undefined;
}

/**
 * Stands in for a handler provider until Nest has built it: it has the class's prototype (so warren
 * reads the class's @Job metadata from it) and forwards `handle` to the Nest-built instance.
 */
function standIn(job: DiscoveredJob): object {
  const handle = (data: unknown, ctx: JobContext): unknown => {
    if (!job.instance)
      throw new ConfigurationError(
        `@Job('${job.jobName}') handler ${job.jobClass.name} ran before Nest finished building it (start workers after app.init())`,
      );
    return job.instance.handle(data, ctx);
  };
  return Object.create(job.jobClass.prototype as object, { handle: { value: handle } }) as object;
}
