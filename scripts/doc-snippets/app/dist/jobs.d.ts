// The compiled job module of the application a JavaScript snippet configures (docs/operating/cli.md's
// `require('./dist/jobs')`): what such a module exports, typed as warren's own types.
export declare const topology: import('warren').TopologyDefinition;
export declare class WelcomeEmail implements import('warren').JobHandler<{ userId: string }> {
  handle(data: { userId: string }): Promise<void>;
}
export declare class DailyReport implements import('warren').JobHandler<unknown> {
  handle(): Promise<void>;
}
