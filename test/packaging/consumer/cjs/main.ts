import { main } from './app';

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
